"""Sessions and their distillation into memories (docs/memory-model.md#sessions-and-distillation).

Services: ``session_submit`` (a client's transcript format converted, the trace scrubbed of secrets
before it is stored; a later submission of the same session: ``services_resubmit.py``),
``session_process`` (the worker: claim → prompt → LLM → parse → dedupe → store, all-or-nothing, one
round for what came since the last), ``session_retry`` / ``sessions_requeue`` / ``sessions_release_idle``.
The injection ledger: ``services_ledger.py``.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Length, Now
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, Organization
from accounts.services import audit_record
from memories.code.services import anchors_create, distilled_anchors
from memories.confidence import bayes as conf
from memories.confidence.services import memories_mark_used
from memories.core.selectors import project_target
from memories.core.services import (
    MemoryDraft,
    memories_added_notify,
    memories_create,
    memory_gate,
    memory_rejection_record,
)
from memories.embedding import embed_texts, memory_embedding_text
from memories.events import session_memories_distilled
from memories.models import AgentSession, Memory
from memories.sessions.continuation import pending_start
from memories.sessions.prompts import (
    DISTILL_SYSTEM_PROMPT,
    ExtractedMemory,
    ExtractionParseError,
    build_extraction_prompt,
    build_repair_prompt,
    parse_extractions,
)
from memories.sessions.selectors import session_bank_memories
from memories.sessions.services_ledger import session_citations_use, session_outcome_attribute
from memories.sessions.services_resubmit import NO_LLM_MESSAGE, Resubmission, SubmitResult, session_resubmit
from memories.sessions.transcripts import PLAIN, TRACE_FORMATS, Converted, trace_convert
from memories.trust.provenance_facts import submitted_provenance
from memories.trust.services import session_held
from memories.validation import session_key_clean, text_scrub_result
from reasoningbank.ai.budget import LLMBudgetExceeded
from reasoningbank.ai.llm import LLMPermanentError, LLMTransientError, LLMUnavailable, llm_from_settings
from reasoningbank.ai.metered import llm_complete
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, Rejected
from reasoningbank.fair_share import slow_work_claim, slow_work_hand_on
from reasoningbank.scrubbing import ScrubResult, scrub_secrets
from reasoningbank.tracing import current_set, task_carrier, traced
from reasoningbank.work_heartbeat import WorkHeartbeat, database_now, worker_identity, worker_is_gone

logger = logging.getLogger(__name__)

SESSION_OUTCOMES = ("success", "failure", "unknown")
MAX_ATTEMPTS = 3  # transient LLM failures are retried this many times with exponential backoff
RETRY_BASE_SECONDS = 30
DUPLICATE_SIMILARITY = 0.95  # an extraction this close to an existing memory only reinforces it
FINISHED = (AgentSession.STATUS_DONE, AgentSession.STATUS_FAILED, AgentSession.STATUS_HELD)  # distillation is over


# --- submit ----------------------------------------------------------------------------------------


def session_submit(
    *,
    principal: Principal,
    session_id: Any,
    outcome: Any,
    trace: Any,
    project: str | None = None,
    trace_format: str = PLAIN,
    partial: bool = False,
) -> SubmitResult:
    """Accept a session for distillation. ``trace`` is in ``trace_format`` (a client's transcript
    format is converted to a compact trace, memories/sessions/transcripts.py); without an ``outcome``
    the one the transcript shows is taken. Submitting the same session id again replaces the trace
    while the session waits for its first distillation; once it was distilled, a trace that continues
    it is distilled again for its new turns (``session_resubmit``).
    ``partial``: the session goes on, so distillation waits until no submission has come for
    ``SESSION_IDLE_SECONDS`` (a final submission queues it at once)."""
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"submitting sessions needs the '{SCOPE_MEMORIES_WRITE}' scope")
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id.strip()) > 200:
        raise InvalidInput("session_id is required (1-200 characters)", field="session_id")
    if "\x00" in session_id:  # PostgreSQL cannot even compare text containing NUL
        raise InvalidInput("session_id must not contain NUL characters", field="session_id")
    session_id = session_key_clean(session_id, required=True)  # a secret in it: refused
    if outcome is not None and outcome not in SESSION_OUTCOMES:
        raise InvalidInput(f"outcome must be one of {', '.join(SESSION_OUTCOMES)}", field="outcome")
    if trace_format not in TRACE_FORMATS:
        raise InvalidInput(f"trace_format must be one of {', '.join(TRACE_FORMATS)}", field="trace_format")
    if not isinstance(trace, str) or not trace.strip():
        raise InvalidInput("trace is required: the session's transcript as text", field="trace")
    size = len(trace.encode("utf-8"))
    if size > settings.SESSION_TRACE_MAX_BYTES:
        raise InvalidInput(
            f"trace is {size:,} bytes; the limit is {settings.SESSION_TRACE_MAX_BYTES:,} bytes "
            "(send the end of the session or a summary)",
            field="trace",
        )
    target = project_target(principal, project)
    external_id = session_id.strip()
    existing = AgentSession.objects.filter(project=target, external_id=external_id).first()
    scrubbed, converted = _trace_prepare(trace.replace("\x00", ""), trace_format)
    outcome = outcome if outcome is not None else converted.outcome
    if trace_format != PLAIN:  # a client's transcript tells the agent's own words apart: what it cited, it used
        session_citations_use(principal=principal, session_key=external_id, trace=converted.trace)
    waiting = llm_from_settings().provider == "none"
    hold_until = timezone.now() + timedelta(seconds=settings.SESSION_IDLE_SECONDS) if partial and not waiting else None
    again = Resubmission(
        scrubbed.text, scrubbed.redactions, outcome, hold_until, waiting, converted.outcome_reason, converted.places
    )
    if existing is not None:
        return session_resubmit(principal, existing, again, enqueue=session_enqueue)
    with transaction.atomic():
        session, created = AgentSession.objects.get_or_create(
            project=target,
            external_id=external_id,
            defaults={
                "organization": principal.organization,
                "outcome": outcome,
                "trace": scrubbed.text,
                "redactions": scrubbed.redactions,
                "places": converted.places,
                "status": AgentSession.STATUS_WAITING if waiting else AgentSession.STATUS_QUEUED,
                "error": NO_LLM_MESSAGE if waiting else "",
                "submitted_by_token": principal.token,
                "submitted_provenance": submitted_provenance(principal, at=timezone.now()),
                "next_attempt_at": hold_until,
            },
        )
        if created:
            audit_record(
                organization=principal.organization,
                actor=principal,
                verb="session.submit",
                target=session,
                data={
                    "external_id": external_id,
                    "outcome": outcome,
                    "redactions": scrubbed.redactions,
                    "trace_format": trace_format,
                    "partial": partial,
                },
            )
            if not waiting and hold_until is None:
                transaction.on_commit(lambda: session_enqueue(session.id))
    if not created:  # a submission of the same session at the same moment won: this one comes after it
        return session_resubmit(principal, session, again, enqueue=session_enqueue)
    return SubmitResult(session, created, outcome_reason=converted.outcome_reason)


# what a moderator (or the resume task) may queue again
RETRYABLE = (AgentSession.STATUS_FAILED, AgentSession.STATUS_WAITING, AgentSession.STATUS_WAITING_BUDGET)


def _trace_prepare(trace: str, trace_format: str) -> tuple[ScrubResult, Converted]:
    """The trace as stored, scrubbed of secrets, and what converting it showed. A client's transcript
    is scrubbed before it is converted (a secret cut in half by the truncation of a long output could
    no longer be recognised) and after (what JSON escaping hid is plain text now)."""
    if trace_format == PLAIN:
        scrubbed = text_scrub_result(trace, seen_in="session.submit")
        return scrubbed, trace_convert(scrubbed.text, PLAIN)
    raw = text_scrub_result(trace, seen_in="session.submit")
    converted = trace_convert(raw.text, trace_format)
    if not converted.trace.strip():
        raise Rejected(
            f"trace holds no conversation in the {trace_format} format", field="trace", code="rejected_unreadable_trace"
        )
    scrubbed = text_scrub_result(converted.trace, seen_in="session.submit")
    total = raw.redactions + scrubbed.redactions
    return ScrubResult(scrubbed.text, total, scrubbed.kinds, scrubbed.own_tokens), converted


def sessions_release_idle() -> int:
    """Periodic: sessions handed in while they went on (``partial``) whose idle wait is over are
    queued for distillation, each once (the release is a conditional update), and the memories they
    were given learn their outcome — the session is over, even if its client never said so. A retry
    waiting for its backoff (attempts counted) has its own schedule and is left alone."""
    released = 0
    due = AgentSession.objects.filter(
        status=AgentSession.STATUS_QUEUED, attempts=0, next_attempt_at__lte=timezone.now()
    ).values_list("pk", flat=True)
    for session_id in list(due[:500]):
        with transaction.atomic():
            if AgentSession.objects.filter(pk=session_id, attempts=0, next_attempt_at__isnull=False).update(
                next_attempt_at=None, updated_at=timezone.now()
            ):
                session = AgentSession.objects.select_related("organization", "submitted_by_token").get(pk=session_id)
                if session.outcome in ("success", "failure"):
                    session_outcome_attribute(
                        principal=_session_principal(session),
                        session_key=session.external_id,
                        succeeded=session.outcome == "success",
                    )
                transaction.on_commit(functools.partial(session_enqueue, session_id))
                released += 1
    return released


def session_enqueue(session_id: str, *, delay_seconds: float = 0) -> None:
    from django_q.models import Schedule
    from django_q.tasks import async_task

    if delay_seconds <= 0:  # its trace continues the request's; the worker's queue, even from the webhook worker's
        async_task("memories.tasks.session_distill", session_id, task_name=f"distill {session_id}",
                   cluster=settings.Q_CLUSTER["name"], **task_carrier())  # fmt: skip
    else:
        Schedule.objects.create(
            func="memories.tasks.session_distill",
            args=repr((session_id,)),
            schedule_type=Schedule.ONCE,
            next_run=timezone.now() + timedelta(seconds=delay_seconds),
            name=f"retry {session_id} {timezone.now().timestamp():.0f}",
        )


# --- process (the worker) --------------------------------------------------------------------------


def session_claim(session_id: str) -> AgentSession | None:
    """Queued/waiting → running when its organization's share of the worker admits it (fair_share.py), else None."""
    claimable = [AgentSession.STATUS_QUEUED, AgentSession.STATUS_WAITING]
    rows = AgentSession.objects.filter(pk=session_id, status__in=claimable)
    organization_id, now = rows.values_list("organization_id", flat=True).first(), timezone.now()
    claim = functools.partial(rows.update, status=AgentSession.STATUS_RUNNING, started_at=now, updated_at=now,
                              heartbeat_at=Now(), worker=worker_identity())  # fmt: skip
    if organization_id is None or not slow_work_claim("session", session_id, organization_id, claim):
        return None
    return AgentSession.objects.select_related("organization", "project", "submitted_by_token").get(pk=session_id)


@traced(
    "session.distill",
    result=lambda s: {"claimed": False} if s is None else {"status": s.status, "attempts": s.attempts},
)
def session_process(session_id: str, *, llm: Any = None) -> AgentSession | None:
    """Distil one session. Outcomes: done (0-3 memories), held (some wait in quarantine), waiting_for_llm,
    waiting_for_budget, queued again after a transient LLM failure (with backoff), or failed with the error kept.
    While it runs its heartbeat is stamped: a session whose worker dies is queued again (sessions_recover_stale)."""
    session = session_claim(session_id)
    if session is None:
        return None
    try:
        with WorkHeartbeat(AgentSession, session.id, interval=settings.WORK_HEARTBEAT_INTERVAL):
            return _session_distill(session, llm)
    finally:
        slow_work_hand_on(after=session.organization_id)  # this slot goes to the next in line


def _session_distill(session: AgentSession, llm: Any) -> AgentSession:
    """One round: what the session's trace holds after the part distilled before (all of it the first time)."""
    org = session.organization
    start = pending_start(session.trace, session.distilled_upto)
    part = session.trace[start:]
    if not part.strip():  # queued again with nothing new (a worker that died after its round's end)
        return _session_round_end(session, warnings=session.warnings, counted=False)
    injected = session_bank_memories(_session_principal(session), session)
    current_set(  # the trace's length, never the trace
        session_id=session.id,
        org_id=org.id,
        project_id=session.project_id,
        outcome=session.outcome,
        trace_length=len(part),
        round=session.rounds + 1,
        injected_memories=len(injected),
    )
    prompt = build_extraction_prompt(
        outcome=session.outcome,
        trace=part,
        injected=[(m.title, m.description) for m in injected],
        continued=start > 0,
    )
    try:
        reply = _complete(org, session, prompt, llm)
        try:
            extracted = parse_extractions(reply)
        except ExtractionParseError as first_error:
            repair = build_repair_prompt(prompt, reply, first_error)
            reply = _complete(org, session, repair, llm)
            try:
                extracted = parse_extractions(reply)
            except ExtractionParseError as second_error:
                return _session_finish(
                    session,
                    AgentSession.STATUS_FAILED,
                    error=f"the LLM's reply could not be parsed after a repair attempt: {second_error}",
                    raw_reply=reply,
                )
    except LLMBudgetExceeded as exc:
        # nothing was spent: the session waits for the period's turn (or a higher cap), attempts untouched
        return _session_finish(
            session, AgentSession.STATUS_WAITING_BUDGET, error=f"waiting: {exc}", next_attempt_at=exc.resets_at
        )
    except LLMUnavailable as exc:
        return _session_finish(session, AgentSession.STATUS_WAITING, error=f"waiting: {exc}")
    except LLMTransientError as exc:
        attempts = session.attempts + 1
        if attempts >= MAX_ATTEMPTS:
            return _session_finish(
                session, AgentSession.STATUS_FAILED, error=f"LLM failed {attempts} times: {exc}", attempts=attempts
            )
        delay = RETRY_BASE_SECONDS * 2 ** (attempts - 1)
        finished = _session_finish(
            session,
            AgentSession.STATUS_QUEUED,
            error=f"attempt {attempts} failed, retrying in {delay}s: {exc}",
            attempts=attempts,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
        )
        session_enqueue(session.id, delay_seconds=delay)
        return finished
    except LLMPermanentError as exc:
        return _session_finish(session, AgentSession.STATUS_FAILED, error=f"LLM error: {exc}")
    current_set(extracted=len(extracted))
    return _session_store(session, extracted, injected)


def _complete(org: Organization, session: AgentSession, prompt: str, llm: Any) -> str:
    return llm_complete(
        organization=org, purpose="distill", system=DISTILL_SYSTEM_PROMPT, prompt=prompt, llm=llm, subject=session
    ).text


def _session_principal(session: AgentSession) -> Principal:
    return Principal(
        organization=session.organization,
        scopes=frozenset({SCOPE_MEMORIES_WRITE}),
        token=session.submitted_by_token,
    )


def _session_gate(
    session: AgentSession, extracted: list[ExtractedMemory]
) -> tuple[list[tuple[ExtractedMemory, MemoryDraft]], list[str]]:
    """The extractions the write gate lets in (as scrubbed drafts), and a warning for each it kept out
    (also a ``memory.rejected`` audit row): a gated draft is skipped, the session still succeeds."""
    passed: list[tuple[ExtractedMemory, MemoryDraft]] = []
    warnings: list[str] = []
    for item in extracted:
        draft = MemoryDraft(
            title=item.title,
            description=item.description,
            content=item.content,
            outcome=item.outcome,
            tags=list(item.tags),
        )
        rejection = memory_gate(draft)
        if rejection is None:
            passed.append((item, draft))
            continue
        warnings.append(f"skipped “{draft.title[:80]}”: {rejection.message}")
        memory_rejection_record(
            organization=session.organization,
            actor=None,
            project=session.project,
            source="distillation",
            reason=rejection.reason,
            field=rejection.field,
            message=rejection.message,
            title=draft.title,
            data={"session": session.id},
        )
        logger.info("session %s: the write gate kept out %r (%s)", session.id, draft.title[:80], rejection.reason)
    return passed, warnings


def _session_store(session: AgentSession, extracted: list[ExtractedMemory], injected: list[Memory]) -> AgentSession:
    """Gate, embed, drop restatements of existing (or injected) memories, store the rest — atomically."""
    principal = _session_principal(session)
    passed, warnings = _session_gate(session, extracted)
    if not passed:
        return _session_round_end(session, warnings=warnings)
    vectors, _ = embed_texts([memory_embedding_text(d.title, d.description, d.content) for _, d in passed])
    with transaction.atomic():
        keep: list[tuple[ExtractedMemory, MemoryDraft, list[float]]] = []
        reinforced: dict[str, Memory] = {}
        for (item, draft), vector in zip(passed, vectors, strict=True):
            twin = _near_duplicate(session, vector, injected)
            if twin is not None:
                reinforced[twin.id] = twin
                continue
            if any(_cosine(vector, other) >= DUPLICATE_SIMILARITY for _, _, other in keep):
                continue
            keep.append((item, draft, vector))
        created: list[Memory] = []
        for item, draft, vector in keep:
            initial = conf.initial_confidence_for_outcome(
                session.outcome if session.outcome in ("success", "failure") else item.outcome
            )
            (memory,) = memories_create(
                principal=principal,
                drafts=[draft],
                project=session.project,
                origin=Memory.ORIGIN_DISTILLED,
                initial_confidence=initial,
                source_session=session,
                vectors=[vector],
            )
            text = f"{draft.title}\n{draft.description}\n{draft.content}"  # the places it is about
            anchors = distilled_anchors(places=session.places, text=text, outcome=draft.outcome, named=item.files,
                                        repository=session.project.repository)  # fmt: skip
            anchors_create(memory=memory, anchors=anchors)
            created.append(memory)
        if created:  # in this transaction: what a receiver adds to them is stored with them or not at all
            session_memories_distilled.send(sender=AgentSession, session=session, memories=created)
        if reinforced:
            memories_mark_used(principal=principal, memories=list(reinforced.values()), project=session.project)
        finished = _session_round_end(session, warnings=warnings)
    if created:
        memories_added_notify(session.project, len(created))
    current_set(memories_created=len(created), memories_reinforced=len(reinforced))  # on session.distill
    logger.info("session %s distilled: %d new, %d reinforced", session.id, len(created), len(reinforced))
    return finished


def _near_duplicate(session: AgentSession, vector: list[float], injected: list[Memory]) -> Memory | None:
    """An active memory in the session's project (or one that was injected) that the extraction
    merely restates (cosine similarity ≥ 0.95)."""
    candidates = Memory.objects.filter(
        Q(project=session.project) | Q(pk__in=[m.pk for m in injected]),
        organization=session.organization,
        state=Memory.STATE_ACTIVE,
        embedding__isnull=False,
    )
    best = candidates.annotate(distance=CosineDistance("embedding", vector)).order_by("distance").first()
    if best is not None and 1.0 - best.distance >= DUPLICATE_SIMILARITY:  # type: ignore[attr-defined]
        return best
    return None


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
    return dot / norm if norm else 0.0


def _session_round_end(session: AgentSession, *, warnings: list[str], counted: bool = True) -> AgentSession:
    """A round over: the trace the worker read is distilled, and the session is done — or held while a
    memory it produced (in any round) waits in quarantine. Turns a submission added meanwhile are queued
    for the next round: at once, or once the session is idle when that submission said it goes on."""
    read = len(session.trace)
    with transaction.atomic():
        length, hold = (
            AgentSession.objects.select_for_update()
            .filter(pk=session.pk)
            .annotate(length=Length("trace"))
            .values_list("length", "next_attempt_at")
            .get()
        )
        quarantined = Memory.objects.filter(source_session=session, state=Memory.STATE_QUARANTINED)
        held = session_held(list(quarantined.order_by("created_at", "id")))  # what the detector found in them
        status = AgentSession.STATUS_HELD if held else AgentSession.STATUS_DONE
        rounds = session.rounds + int(counted)
        finished = _session_finish(session, status, warnings=warnings, held=held, distilled_upto=read, rounds=rounds)
        if length <= read:
            return finished
        waiting = llm_from_settings().provider == "none"
        AgentSession.objects.filter(pk=session.pk).update(  # the event above is the round's: the row goes on
            status=AgentSession.STATUS_WAITING if waiting else AgentSession.STATUS_QUEUED,
            error=NO_LLM_MESSAGE if waiting else "",
            finished_at=None,
            next_attempt_at=None if waiting else hold,
        )
        if not waiting and hold is None:
            transaction.on_commit(functools.partial(session_enqueue, session.id))
    return AgentSession.objects.select_related("organization", "project").get(pk=session.pk)


def _session_finish(
    session: AgentSession, status: str, *, error: str = "", raw_reply: str = "", **fields: Any
) -> AgentSession:
    now = timezone.now()
    session.status = status
    # the LLM saw the scrubbed trace only, but its replies and the provider's errors are stored too
    session.error = scrub_secrets(error).text[:4000]
    session.raw_reply = scrub_secrets(raw_reply).text[:20000]
    session.updated_at = now
    session.finished_at = now if status in FINISHED else None
    if status != AgentSession.STATUS_QUEUED:
        session.next_attempt_at = None
    for name, value in fields.items():
        setattr(session, name, value)
    # never the trace, outcome or submitter: a submission may have continued the session meanwhile
    written = ["status", "error", "raw_reply", "updated_at", "finished_at", "next_attempt_at", *fields]
    session.save(update_fields=list(dict.fromkeys(written)))
    return session


# --- retry / requeue -------------------------------------------------------------------------------


def session_retry(*, principal: Principal, session: AgentSession) -> AgentSession:
    """Put a failed (or waiting) session back in the queue (moderators, the dashboard, REST)."""
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"retrying sessions needs the '{SCOPE_MEMORIES_WRITE}' scope")
    if session.status not in RETRYABLE:
        # the session's state forbids it (a 409), the request itself is well-formed
        raise Conflict(f"only failed or waiting sessions can be retried (this one is {session.status})")
    sessions_requeue(AgentSession.objects.filter(pk=session.pk))
    audit_record(organization=session.organization, actor=principal, verb="session.retry", target=session)
    session.refresh_from_db()
    return session


def sessions_requeue(queryset: Any) -> int:
    """Queue sessions again (attempts reset). Without an LLM they stay waiting, visibly."""
    waiting = llm_from_settings().provider == "none"
    ids = list(queryset.values_list("pk", flat=True))
    if not ids:
        return 0
    AgentSession.objects.filter(pk__in=ids).update(
        status=AgentSession.STATUS_WAITING if waiting else AgentSession.STATUS_QUEUED,
        attempts=0,
        error=NO_LLM_MESSAGE if waiting else "",
        warnings=[],
        next_attempt_at=None,
        updated_at=timezone.now(),
    )
    if not waiting:
        for session_id in ids:
            transaction.on_commit(functools.partial(session_enqueue, session_id))
    return len(ids)


def sessions_resume_waiting() -> int:
    """Periodic: once an LLM is configured, sessions that were waiting for one are queued; sessions
    waiting for their organization's LLM budget are queued once the period that stopped them turned
    (``next_attempt_at``) or its caps moved since (``LlmBudget.updated_at``: an admin raised a cap, the
    plan changed). One still over a cap goes back to waiting at once, without an LLM call."""
    if llm_from_settings().provider == "none":
        return 0
    budget = Q(next_attempt_at__lte=timezone.now()) | Q(organization__llm_budget__updated_at__gt=F("updated_at"))
    waiting = Q(status=AgentSession.STATUS_WAITING) | (Q(status=AgentSession.STATUS_WAITING_BUDGET) & budget)
    return sessions_requeue(AgentSession.objects.filter(waiting))


def sessions_recover_stale(*, stale_after: timedelta | None = None) -> int:
    """Sessions left running by a worker that died (killed, crashed, out of memory) go back to the
    queue, with their attempt counted: their heartbeat, stamped every WORK_HEARTBEAT_INTERVAL while
    they are distilled, is older than WORK_HEARTBEAT_STALE_AFTER, or their process on this host is
    gone. One that took its worker down MAX_ATTEMPTS times is failed, with the reason, instead of
    killing the next worker too. Nothing of a distillation is stored before its last step (one
    transaction), so a session distilled again cannot be stored twice."""
    now = timezone.now()
    # beats are stamped by the database's clock: judged by it too
    cutoff = database_now() - (stale_after or timedelta(seconds=settings.WORK_HEARTBEAT_STALE_AFTER))
    running = AgentSession.objects.filter(status=AgentSession.STATUS_RUNNING)
    stale = set(
        running.filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)).values_list(
            "pk", flat=True
        )
    )
    stale |= {pk for pk, worker in running.exclude(worker="").values_list("pk", "worker") if worker_is_gone(worker)}
    recovered = 0
    for session in AgentSession.objects.filter(pk__in=stale, status=AgentSession.STATUS_RUNNING):
        attempts = session.attempts + 1
        if attempts >= MAX_ATTEMPTS:
            status = AgentSession.STATUS_FAILED
            error = f"its worker died {attempts} times while distilling it (killed or crashed); not tried again"
        else:
            status = AgentSession.STATUS_QUEUED
            error = f"attempt {attempts}: the worker distilling it stopped (killed or crashed); queued again"
        updated = AgentSession.objects.filter(pk=session.pk, status=AgentSession.STATUS_RUNNING).update(
            status=status,
            attempts=attempts,
            error=error,
            updated_at=now,
            next_attempt_at=None,
            finished_at=now if status == AgentSession.STATUS_FAILED else None,
        )
        if updated and status == AgentSession.STATUS_QUEUED:
            transaction.on_commit(functools.partial(session_enqueue, session.pk))
        recovered += updated
    if recovered:
        logger.warning("Sessions whose worker died: %d queued again or failed", recovered)
    return recovered
