"""Writes of consolidated summaries (docs/memory-model.md#summaries): consolidation hands over plain
values (memories never import the consolidation app), and activation is counted when a summary is
injected into a session or returned by a search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memories.context.summary_parts import (
    SUMMARY_ERROR_MAX,
    SummaryParts,
    SummaryPartsInvalid,
    summary_parts_check,
    summary_parts_repair,
)
from memories.embedding import embed_texts, summary_embedding_text
from memories.models import Memory, MemorySummary
from memories.trust.screening import summary_texts
from memories.trust.services import texts_screen
from reasoningbank.ai.embedders import embedder_from_settings
from reasoningbank.db_threads import other_connections_usable
from reasoningbank.db_threads import write_behind as db_write_behind
from reasoningbank.errors import InvalidInput
from reasoningbank.scrubbing import scrub_secrets

RAW_REPLY_MAX = 20_000  # characters of an unparseable reply kept for moderators


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """Every string inside ``value`` with secrets redacted (the model may echo one a source held
    before scrubbing existed)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrubbed(item, scrub) for item in value]
    if isinstance(value, dict):
        return {key: _scrubbed(item, scrub) for key, item in value.items()}
    return value


def summary_parts_stored(
    parts: SummaryParts, *, source_ids: Sequence[str], scrub: Callable[[str], str] | None = None
) -> SummaryParts:
    """Checked parts as they are stored: every string with its secrets redacted (by ``scrub``, else
    ``scrub_secrets``), then cut back to the contract's limits (a redaction marker can be longer than
    the short secret it replaces), so that every stored summary keeps the contract an import checks
    (docs/security/imports.md). Also a bank import's way to store a summary's parts."""
    scrubbed = _scrubbed(
        {
            "summary": parts.summary,
            "key_facts": parts.key_facts,
            "decisions": parts.decisions,
            "superseded_facts": parts.superseded_facts,
        },
        scrub or (lambda text: scrub_secrets(text).text),
    )
    return summary_parts_repair(**scrubbed, source_ids=source_ids)


def summary_store(
    *,
    memory: Memory,
    sources: Sequence[Memory],
    run_id: str,
    summary: str = "",
    key_facts: Sequence[str] = (),
    decisions: Sequence[dict[str, Any]] = (),
    superseded_facts: Sequence[dict[str, Any]] = (),
    error: str = "",
    raw_reply: str = "",
) -> MemorySummary:
    """The summary of the cluster that became ``memory`` — ``ready`` when ``summary`` is given, else
    ``rejected`` with ``error`` and the reply kept. One per consolidated memory: a later run replaces
    a rejected one (a retry), never a ready one. The parts keep the contract of a stored summary
    (``memories.context.summary_parts``, the one a bank import checks too): an ``InvalidInput`` names
    the part at fault.

    A summary's text passes the instruction-smell detector like a memory's: under the organization's
    ``quarantine`` policy a flagged one is stored ``held`` (never injected or returned until an admin
    approves it), under ``flag`` ready with its ``flags`` (docs/security/memory-poisoning.md#quarantine)."""
    assert memory.project_id is not None, "summaries belong to a project's consolidated memory"
    source_ids = [m.id for m in sources]
    try:
        parts = summary_parts_check(
            summary=summary,
            key_facts=list(key_facts),
            decisions=list(decisions),
            superseded_facts=list(superseded_facts),
            status=MemorySummary.STATUS_READY if summary else MemorySummary.STATUS_REJECTED,
            source_ids=source_ids,
        )
    except SummaryPartsInvalid as exc:
        raise InvalidInput(str(exc), field=exc.field) from None
    starts = [m.created_at for m in sources] or [memory.created_at]
    fields: dict[str, Any] = {
        "organization_id": memory.organization_id,
        "project_id": memory.project_id,
        "source_memory_ids": source_ids,
        "consolidation_run_id": run_id,
        "confidence": memory.confidence,
        "temporal_start": min(starts),
        "temporal_end": max(m.updated_at for m in sources) if sources else memory.created_at,
        "created_at": timezone.now(),
    }
    if summary:
        stored = summary_parts_stored(parts, source_ids=source_ids)
        (screening,) = texts_screen(
            memory.organization,
            [
                summary_texts(
                    summary=stored.summary, key_facts=stored.key_facts, decisions=stored.decisions,
                    superseded_facts=stored.superseded_facts,
                )
            ],
        )  # fmt: skip
        (vector,), model = embed_texts([summary_embedding_text(stored.summary, stored.key_facts)])
        fields |= {
            "status": MemorySummary.STATUS_HELD if screening.quarantined else MemorySummary.STATUS_READY,
            "flags": screening.flags,
            "summary": stored.summary,
            "key_facts": stored.key_facts,
            "decisions": stored.decisions,
            "superseded_facts": stored.superseded_facts,
            "error": "",
            "raw_reply": "",
            "embedding": vector,
            "embedding_model": model,
        }
    else:
        fields |= {
            "status": MemorySummary.STATUS_REJECTED,
            "flags": [],
            "error": error[:SUMMARY_ERROR_MAX],
            "raw_reply": scrub_secrets(raw_reply[:RAW_REPLY_MAX]).text,
        }
    row, _ = MemorySummary.objects.update_or_create(memory=memory, defaults=fields)
    return row


def summaries_activate(summary_ids: Sequence[str], *, write_behind: bool = False) -> None:
    """A summary served to a session or a search counts as an activation. With
    ``write_behind`` (a search) the write happens after the answer, like the usage signals."""
    if not summary_ids:
        return
    ids = list(summary_ids)
    if write_behind and other_connections_usable() and db_write_behind(_activate, ids):
        return
    _activate(ids)


def _activate(summary_ids: list[str]) -> None:
    with transaction.atomic():
        # locked in id order first, like the memories (memories.locks): two activations of overlapping
        # summaries (a search's written behind, a memory_context's inline) queue instead of deadlocking
        list(
            MemorySummary.objects.select_for_update(no_key=True).filter(pk__in=summary_ids).order_by("pk").values("pk")
        )
        MemorySummary.objects.filter(pk__in=summary_ids).update(
            activation_count=F("activation_count") + 1, last_activated_at=timezone.now()
        )


def summaries_reembed(*, only_stale: bool = True, batch: int = 256) -> int:
    """Re-embed ready summaries with the configured embedder (``reembed_memories`` calls it after the
    memories): only those embedded by another model unless ``only_stale`` is false."""
    qs = MemorySummary.objects.filter(status=MemorySummary.STATUS_READY)
    if not qs.exists():  # nothing to embed: loading the model costs seconds
        return 0
    if only_stale:
        qs = qs.exclude(embedding_model=embedder_from_settings().name, embedding__isnull=False)
    done, last = 0, ""
    while chunk := list(qs.filter(pk__gt=last).order_by("pk").only("id", "summary", "key_facts")[:batch]):
        vectors, model = embed_texts([summary_embedding_text(s.summary, s.key_facts) for s in chunk])
        for summary, vector in zip(chunk, vectors, strict=True):
            MemorySummary.objects.filter(pk=summary.pk).update(embedding=vector, embedding_model=model)
        done += len(chunk)
        last = chunk[-1].pk
    return done
