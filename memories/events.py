"""Django signals the memories app sends (receivers live in the apps that react)."""

from typing import Any

from django.db import transaction
from django.dispatch import Signal

# sent after new memories land in a project: kwargs project, count (on-demand consolidation listens)
memories_added = Signal()

# sent after memories_archive archived memories (every archive goes through it: consolidation, moderators,
# pruning): kwargs organization, memory_ids (those it archived), reason (Memory.ARCHIVED_*), into (the
# memory they were merged into, or None), data (the audit row's details: the run, the kept memory);
# webhooks listen (memory.merged, memory.superseded)
memories_archived = Signal()

# sent after an admin approved a quarantined memory (memories.trust.services_quarantine.quarantine_approve):
# kwargs organization_id, memory (active now), first_entry (True when it was stored in quarantine when it
# was written and never approved before: it enters the bank now, rather than coming back after an edit or
# a restore put it in quarantine); webhooks listen (memory.created)
memory_approved = Signal()

# sent after an existing memory entered quarantine (an edit whose new text the detector flagged, or a
# restore that screened it again): kwargs organization_id, memory (quarantined now). A memory stored in
# quarantine when it is written is a new row (post_save); webhooks listen to both (memory.quarantined)
memory_quarantined = Signal()

# sent inside the transaction that stores what one round of a session's distillation made: kwargs session,
# memories (those created); seeding from history anchors them to the commits they cite (memories/code)
session_memories_distilled = Signal()


def memory_quarantined_announce(memory: Any) -> None:
    """``memory_quarantined`` for ``memory``, once the transaction holding the change commits."""
    transaction.on_commit(
        lambda: memory_quarantined.send(sender=type(memory), organization_id=memory.organization_id, memory=memory)
    )
