"""Django signals the memories app sends (receivers live in the apps that react)."""

from django.dispatch import Signal

# sent after new memories land in a project: kwargs project, count (on-demand consolidation listens)
memories_added = Signal()

# sent after memories_archive archived memories (every archive goes through it: consolidation, moderators,
# pruning): kwargs organization, memory_ids (those it archived), reason (Memory.ARCHIVED_*), into (the
# memory they were merged into, or None), data (the audit row's details: the run, the kept memory);
# webhooks listen (memory.merged, memory.superseded)
memories_archived = Signal()
