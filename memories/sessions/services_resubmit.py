"""A session handed in again (docs/memory-model.md#sessions-that-continue): its trace replaced while it
waits for its first distillation, and continued — the new turns appended to what was distilled, for
another round — once it was distilled or while it is.

The session's row is locked while its trace is compared and written, so two captures at once are taken
one after the other: the second finds the first's trace and adds only what it holds beyond it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.services import audit_record
from memories.code.transcript_anchors import places_merge
from memories.models import AgentSession
from memories.sessions.continuation import TraceMismatch, distilled_trim, redaction_marks, trace_continue
from memories.trust.provenance_facts import submitted_provenance
from reasoningbank.errors import Conflict

# a session waiting for distillation: a later submission may still replace what it holds beyond the
# distilled part (all of its trace, before its first round)
REPLACEABLE = (AgentSession.STATUS_QUEUED, AgentSession.STATUS_WAITING, AgentSession.STATUS_WAITING_BUDGET)
NO_LLM_MESSAGE = (
    "waiting: no LLM provider is configured (set LLM_PROVIDER); the session is kept and will be distilled then"
)


@dataclass(frozen=True)
class SubmitResult:
    session: AgentSession
    created: bool
    replaced: bool = False  # an earlier submission's trace, not yet distilled, was replaced
    continued: bool = False  # turns after what was distilled (or is being distilled) were added
    outcome_reason: str = ""  # why the outcome is what it is, when the trace was read for it


@dataclass(frozen=True)
class Resubmission:
    """A later submission of an existing session, its trace scrubbed and converted."""

    trace: str
    redactions: int
    outcome: str
    hold_until: Any  # partial: distil once the session has been idle until then
    waiting: bool  # no LLM configured
    reason: str
    places: list[dict[str, Any]] = field(default_factory=list)  # what its transcript shows it worked in


def session_resubmit(
    principal: Principal, session: AgentSession, new: Resubmission, *, enqueue: Callable[[str], None]
) -> SubmitResult:
    """``new`` for ``session``: its trace in place of the one not distilled yet, or the turns it adds to
    a session distilled (or being distilled) before. A trace that does not continue the distilled part is
    a ``Conflict`` naming the fix, and nothing changes."""
    with transaction.atomic():
        session = AgentSession.objects.select_for_update().get(pk=session.pk)
        open_ = session.status in REPLACEABLE and session.attempts == 0  # no worker has read what is pending
        kept = session.distilled_upto if open_ else len(session.trace)
        try:
            tail = trace_continue(session.trace[:kept], new.trace)
        except TraceMismatch:
            raise Conflict(_mismatch_message(session), field="trace") from None
        if open_:
            replaced = _session_replace(principal, session, new, kept, tail, enqueue=enqueue)
            result = SubmitResult(session, False, replaced=replaced, outcome_reason=new.reason)
        elif tail:
            _session_continue(principal, session, new, tail, enqueue=enqueue)
            result = SubmitResult(session, False, continued=True, outcome_reason=new.reason)
        else:
            result = SubmitResult(session, False, outcome_reason=new.reason)
    session.refresh_from_db()
    return result


def _mismatch_message(session: AgentSession) -> str:
    distilled = f" (distilled {session.rounds} time{'s' * (session.rounds != 1)})" if session.rounds else ""
    return (
        f"this trace does not continue the one session {session.external_id!r} already holds{distilled}: a "
        "session handed in again must be its transcript grown at the end — send the whole transcript, or its "
        "first prompt and its end as the plugins' hooks do (only what follows the part distilled before is "
        "distilled again); a different session needs a session_id of its own"
    )


def _session_replace(
    principal: Principal, session: AgentSession, new: Resubmission, kept: int, tail: str, *, enqueue: Callable
) -> bool:
    """What is pending replaced by the new submission's (all of the trace before the first round), unless
    the new one holds no more of it — a capture arriving late never shortens what is kept, nor changes its
    outcome — and the idle wait started again (the session goes on) or ended (it is over: distil it now)."""
    pending = session.trace[kept:]
    stale = bool(kept) and pending.startswith(tail)
    held = session.next_attempt_at is not None and session.status == AgentSession.STATUS_QUEUED  # idle wait
    fields: dict[str, Any] = {"updated_at": timezone.now()}
    if not stale:
        trace, upto = distilled_trim(session.trace[:kept] + tail, kept, keep=settings.SESSION_TRACE_MAX_BYTES)
        fields.update(
            trace=trace,
            distilled_upto=upto,
            redactions=new.redactions if not kept else _redactions(session, pending, tail),
            outcome=new.outcome,
            submitted_provenance=submitted_provenance(principal, at=timezone.now()),  # who its memories are from
            places=places_merge(session.places, new.places),
        )
    if new.hold_until is not None and (held or session.status == AgentSession.STATUS_WAITING):
        fields["next_attempt_at"] = new.hold_until  # the session goes on: the idle wait starts again
    elif new.hold_until is None and held:
        fields["next_attempt_at"] = None  # the session is over: distil it now
        transaction.on_commit(lambda: enqueue(session.id))
    AgentSession.objects.filter(pk=session.pk).update(**fields)
    return not stale


def _session_continue(
    principal: Principal, session: AgentSession, new: Resubmission, tail: str, *, enqueue: Callable
) -> None:
    """The turns after everything kept, appended. A distilled session goes back to the queue for a round
    of its own; a running one is queued again by its worker when it ends (it read only what it was given);
    a failed one keeps them until a moderator retries it; a retry waiting out its backoff reads them too."""
    now = timezone.now()
    fields: dict[str, Any] = {
        "trace": session.trace + tail,
        "redactions": _redactions(session, "", tail),
        "outcome": new.outcome,
        "submitted_provenance": submitted_provenance(principal, at=now),
        "places": places_merge(session.places, new.places),
        "updated_at": now,
    }
    status = session.status
    if status in (AgentSession.STATUS_DONE, AgentSession.STATUS_HELD):
        fields.update(
            status=AgentSession.STATUS_WAITING if new.waiting else AgentSession.STATUS_QUEUED,
            attempts=0,
            error=NO_LLM_MESSAGE if new.waiting else "",
            finished_at=None,
            next_attempt_at=None if new.waiting else new.hold_until,
        )
        if not new.waiting and new.hold_until is None:
            transaction.on_commit(lambda: enqueue(session.id))
    elif status == AgentSession.STATUS_RUNNING:
        fields["next_attempt_at"] = new.hold_until  # when the worker queues the rest: now, or once idle
    if status != AgentSession.STATUS_RUNNING:  # a worker's offsets are into the trace it read
        fields["trace"], fields["distilled_upto"] = distilled_trim(
            fields["trace"], session.distilled_upto, keep=settings.SESSION_TRACE_MAX_BYTES
        )
    AgentSession.objects.filter(pk=session.pk).update(**fields)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="session.continue",
        target=session,
        data={"added_characters": len(tail), "rounds": session.rounds, "status": status},
    )


def _redactions(session: AgentSession, dropped: str, added: str) -> int:
    """The session's count of redacted secrets once ``dropped`` (a pending part replaced) went and ``added``
    came (each added secret is one ``[REDACTED:…]`` mark in the trace)."""
    return max(0, session.redactions - redaction_marks(dropped) + redaction_marks(added))
