"""The bank's writes other apps make (one of memories' public modules, docs/architecture.md#app-interfaces),
and what such a write needs first: new memories through the write gate (its verdicts) and its screening,
with their provenance (how each came to be) and the row of a rejection; archives, a project's
consolidated summary, the re-embedding at start, the recovery of sessions whose worker died; the row
locks to take before changing memories (in id order, docs/concurrency.md), the embedding of texts, and
the secret scrub of a text bound for the bank.

The services live in their feature packages; this module only names the ones other apps may call, so a
change inside a feature does not reach into consolidation.
"""

from __future__ import annotations

from memories.context.services import summaries_reembed, summary_store
from memories.core.gate import NEAR_COPY
from memories.core.services import (
    REJECTED_VERB,
    MemoryDraft,
    memories_create,
    memories_reembed,
    memory_gate,
    memory_limit_check,
    memory_rejection_record,
)
from memories.embedding import embed_texts, memory_embedding_text
from memories.locks import memories_lock, memories_lock_active
from memories.moderation.services import memories_archive
from memories.sessions.services import sessions_recover_stale, sessions_release_idle
from memories.trust.provenance import HOW_PATTERN, HOW_PROMOTED, HOW_SYNTHESISED
from memories.trust.provenance_facts import ProvenanceInput
from memories.trust.services import drafts_screen
from memories.validation import text_scrub

__all__ = [
    "HOW_PATTERN",
    "HOW_PROMOTED",
    "HOW_SYNTHESISED",
    "NEAR_COPY",
    "REJECTED_VERB",
    "MemoryDraft",
    "ProvenanceInput",
    "drafts_screen",
    "embed_texts",
    "memories_archive",
    "memories_create",
    "memories_lock",
    "memories_lock_active",
    "memories_reembed",
    "memory_embedding_text",
    "memory_gate",
    "memory_limit_check",
    "memory_rejection_record",
    "sessions_recover_stale",
    "sessions_release_idle",
    "summaries_reembed",
    "summary_store",
    "text_scrub",
]
