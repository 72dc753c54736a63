"""Django signals the memories app sends (receivers live in the apps that react)."""

from django.dispatch import Signal

# sent after new memories land in a project: kwargs project, count (on-demand consolidation listens)
memories_added = Signal()
