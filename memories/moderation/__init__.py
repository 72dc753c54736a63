"""Moderation: archive, restore, un-merge, contradictions, and pruning of low-confidence memories."""
