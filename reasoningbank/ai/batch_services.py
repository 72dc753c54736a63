"""Batch mode in the database (docs/llm-spend.md#batch-mode): a ``BatchSession`` answers a subject's LLM
calls (a scheduled consolidation run's) from the answers its earlier batches stored, and records the
calls that have none; ``batch_submit`` sends the recorded calls as one batch (per provider limit), with
their estimated tokens reserved against the organization's budget; ``batches_poll`` (a schedule) reads
the batches that ended, stores their answers, meters them (one ``LlmCall`` per request, ``batch``
set) and settles the reservation. The subject then runs again and finds its answers.

A request the batch did not answer (expired, cancelled, or a failure worth trying again) is made
directly by the next pass, like any call; one the provider refused is that call's error. A batch that
cannot be submitted, or that the provider has not ended a day and an hour later, fails: its requests
are then made directly.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from reasoningbank.ai.batch_providers import BatchAnswer, BatchApi, BatchItem, batch_api
from reasoningbank.ai.budget import Reservation, budget_caps, budget_reserve, budget_settle, call_ceiling
from reasoningbank.ai.budget_rules import CallCost
from reasoningbank.ai.llm import LLM, LLMError, LLMPermanentError, LLMUnavailable, llm_from_settings
from reasoningbank.ai.metered import Organization
from reasoningbank.ai.outbound import outbound_text
from reasoningbank.ai.purposes import purpose_require
from reasoningbank.metrics import LLM_REQUESTS, LLM_TOKENS
from reasoningbank.models import LlmBatch, LlmBatchRequest, LlmCall

logger = logging.getLogger("reasoningbank.llm")

# Well under both providers' limits (Anthropic 100,000 requests or 256 MB, OpenAI 50,000 or 200 MB): a
# run's calls are a few hundred, and a smaller file fails less often on its size
BATCH_REQUESTS_MAX = 5_000
# Each batch answers the calls one pass of the subject could ask; a consolidation run's later phases
# ask only once the earlier ones were answered (the judge, then the synthesis, then the summaries), so
# it takes a few rounds. Past this many, its remaining calls are made directly rather than wait again.
BATCH_ROUNDS_MAX = 4
# Both providers end a batch within 24 hours (its unanswered requests expire); one still open an hour
# after that is failed here, so its subject never waits forever on a provider that lost it
BATCH_WAIT_MAX = timedelta(hours=25)
# An ended batch's answers are needed only until its subject's next pass read them: a run waits at most
# ``BATCH_ROUNDS_MAX`` batches of a day each. Kept a week, then deleted with their replies (tenant text).
BATCH_KEEP = timedelta(days=7)


class LLMDeferred(LLMUnavailable):
    """A call recorded for the next batch: the work it was for waits for the batch's answer."""


def request_key(*, model: str, system: str, prompt: str, max_tokens: int) -> str:
    """What names a request across passes: the same call asked again finds its answer (also its
    ``custom_id`` at the provider, which both allow up to 64 characters of)."""
    digest = hashlib.sha256()
    for part in (model, system, prompt, str(max_tokens)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _subject_ref(subject: Model) -> dict[str, str]:
    return {"subject_type": subject._meta.label_lower, "subject_id": str(subject.pk)}


def batch_rounds(subject: Model) -> int:
    """How many batches ``subject`` sent (failed ones too)."""
    return LlmBatch.objects.filter(**_subject_ref(subject)).count()


def batches_open(subject: Model) -> bool:
    """Whether one of ``subject``'s batches is still with the provider."""
    return LlmBatch.objects.filter(**_subject_ref(subject), status=LlmBatch.STATUS_SUBMITTED).exists()


@dataclass(frozen=True)
class _Recorded:
    key: str
    purpose: str
    system: str
    prompt: str
    max_tokens: int


class BatchSession:
    """One pass of a subject in batch mode: its calls answered from stored answers, the rest recorded."""

    def __init__(self, *, organization: Organization, subject: Model, api: BatchApi) -> None:
        self.organization, self.subject, self.api = organization, subject, api
        rows = LlmBatchRequest.objects.filter(
            batch__organization_id=organization.pk, **{f"batch__{k}": v for k, v in _subject_ref(subject).items()}
        ).exclude(outcome=LlmBatchRequest.OUTCOME_PENDING)
        # a later batch's answer to the same request wins (it was asked again because the first was lost)
        self.answers = {row.key: row for row in rows.order_by("batch__created_at", "pk")}
        self.recorded: dict[str, _Recorded] = {}
        self._lock = threading.Lock()  # the run's phases call from several threads

    def answer(self, *, purpose: str, system: str, prompt: str, max_tokens: int) -> str | LLMError | None:
        """The stored answer's text, the provider's refusal (an error), or None: no answer will come from a
        batch, make the call directly. A call never asked is recorded and answered ``LLMDeferred``."""
        purpose_require(purpose)
        key = request_key(model=self.api.model, system=system, prompt=prompt, max_tokens=max_tokens)
        row = self.answers.get(key)
        if row is not None:
            if row.outcome == LlmBatchRequest.OUTCOME_OK:
                return row.text
            if row.outcome == LlmBatchRequest.OUTCOME_ERROR:
                return LLMPermanentError(
                    f"{self.api.provider} {self.api.model} refused the batched request: {row.error}",
                    provider=self.api.provider,
                    model=self.api.model,
                    attempts=1,
                )
            return None
        with self._lock:
            self.recorded.setdefault(key, _Recorded(key, purpose, system, prompt, max_tokens))
        return LLMDeferred(
            f"deferred to the {self.api.provider} batch API", provider=self.api.provider, model=self.api.model
        )


def batch_session(*, organization: Organization, subject: Model, llm: LLM | None = None) -> BatchSession | None:
    """A batch session for ``subject`` with ``llm``'s provider (the configured one by default), or None
    when it has no batch API or the subject used its rounds (``BATCH_ROUNDS_MAX``): its calls are then
    direct."""
    api = batch_api(llm or llm_from_settings())
    if api is None or batch_rounds(subject) >= BATCH_ROUNDS_MAX:
        return None
    return BatchSession(organization=organization, subject=subject, api=api)


def batch_submit(session: BatchSession) -> list[LlmBatch]:
    """Send the session's recorded calls (in batches of at most ``BATCH_REQUESTS_MAX``), each batch's
    estimated tokens reserved first. Raises ``LLMBudgetExceeded`` when a batch would cross a cap (the
    batches sent before it stay sent); a batch the provider refuses is stored failed (its calls are
    then made directly) and returned like the others."""
    recorded = list(session.recorded.values())
    sent = []
    for start in range(0, len(recorded), BATCH_REQUESTS_MAX):
        sent.append(_submit_one(session, recorded[start : start + BATCH_REQUESTS_MAX]))
    session.recorded.clear()
    return sent


def _submit_one(session: BatchSession, recorded: Sequence[_Recorded]) -> LlmBatch:
    api, organization = session.api, session.organization
    # a batch holds its calls' ceilings (it stays in flight for hours, and its replies come back at once,
    # so there is no running average to learn from in between); raises LLMBudgetExceeded: the work waits
    ceiling = sum(call_ceiling(system=r.system, prompt=r.prompt, max_tokens=r.max_tokens) for r in recorded)
    reservation = budget_reserve(organization, CallCost(likely=ceiling, ceiling=ceiling))
    error, provider_batch_id = "", ""
    try:
        # a batched call's texts leave here, scrubbed like a direct call's (reasoningbank/ai/outbound.py)
        items = [BatchItem(r.key, outbound_text(r.system), outbound_text(r.prompt), r.max_tokens) for r in recorded]
        provider_batch_id = api.submit(items)
    except LLMError as exc:
        budget_settle(reservation, 0)
        error = str(exc)[:2000]
        logger.warning("an LLM batch could not be submitted; its calls will be made directly: %s", error)
    except BaseException:
        budget_settle(reservation, 0)
        raise
    with transaction.atomic():
        batch = LlmBatch.objects.create(
            organization_id=organization.pk,
            provider=api.provider,
            model=api.model,
            provider_batch_id=provider_batch_id,
            status=LlmBatch.STATUS_FAILED if error else LlmBatch.STATUS_SUBMITTED,
            error=error,
            ended_at=timezone.now() if error else None,
            request_count=len(recorded),
            reserved_tokens=0 if error else reservation.tokens,
            reserved_at=reservation.at,
            reserved_period_ids=[] if error else reservation.period_ids,
            **_subject_ref(session.subject),
        )
        LlmBatchRequest.objects.bulk_create(
            LlmBatchRequest(
                organization_id=batch.organization_id,
                batch=batch,
                key=r.key,
                purpose=r.purpose,
                outcome=LlmBatchRequest.OUTCOME_LOST if error else LlmBatchRequest.OUTCOME_PENDING,
                error=error,
            )
            for r in recorded
        )
    return batch


def batches_poll(*, api: BatchApi | None = None, now: datetime | None = None) -> dict[str, int]:
    """Every few minutes (``rb:llm-batches-poll``): read each open batch's state, and store the answers of
    those that ended. A provider that does not answer now is asked again at the next poll. Batches that
    ended more than ``BATCH_KEEP`` ago are deleted (``deleted`` counts their rows and their requests')."""
    now = now or timezone.now()
    counts = {"open": 0, "ended": 0, "failed": 0}
    counts["deleted"], _ = (
        LlmBatch.objects.exclude(status=LlmBatch.STATUS_SUBMITTED).filter(ended_at__lt=now - BATCH_KEEP).delete()
    )
    for batch in LlmBatch.objects.filter(status=LlmBatch.STATUS_SUBMITTED).select_related("organization"):
        batch_api_for = api or batch_api(llm_from_settings())
        if batch_api_for is None or (batch_api_for.provider, batch_api_for.model) != (batch.provider, batch.model):
            batch_fail(batch, f"the LLM configuration changed from {batch.provider} {batch.model}", now=now)
            counts["failed"] += 1
            continue
        try:
            state = batch_api_for.state(batch.provider_batch_id)
            answers = batch_api_for.answers(batch.provider_batch_id) if state.ended else None
        except LLMPermanentError as exc:  # the provider does not know it (deleted, another account)
            batch_fail(batch, str(exc), now=now)
            counts["failed"] += 1
            continue
        except LLMError as exc:
            logger.warning("polling LLM batch %s failed; asked again at the next poll: %s", batch.id, exc)
            counts["open"] += 1
            continue
        if answers is not None:
            batch_store(batch, answers, provider_status=state.provider_status, error=state.failed, now=now)
            counts["ended"] += 1
        elif now - batch.created_at > BATCH_WAIT_MAX:
            batch_fail(batch, f"the provider had not ended it after {BATCH_WAIT_MAX}", now=now)
            counts["failed"] += 1
        else:
            LlmBatch.objects.filter(pk=batch.pk).update(provider_status=state.provider_status, polled_at=now)
            counts["open"] += 1
    return counts


def _reservation(batch: LlmBatch) -> Reservation:
    caps, alert_percent = budget_caps(batch.organization)
    return Reservation(
        organization_id=batch.organization_id,
        tokens=batch.reserved_tokens,
        ceiling=batch.reserved_tokens,  # a batch holds its ceiling (_submit_one)
        at=batch.reserved_at or batch.created_at,
        period_ids=list(batch.reserved_period_ids),
        caps=caps,
        alert_percent=alert_percent,
    )


def batch_store(
    batch: LlmBatch, answers: Sequence[BatchAnswer], *, provider_status: str, error: str = "", now: datetime
) -> None:
    """Store an ended batch's answers on its requests (a request without one is lost: made directly),
    meter each answered or refused request as a batched call, and settle the batch's reservation."""
    by_key = {answer.custom_id: answer for answer in answers}
    latency_ms = max(0.0, (now - batch.created_at).total_seconds() * 1000)
    with transaction.atomic():
        if not LlmBatch.objects.filter(pk=batch.pk, status=LlmBatch.STATUS_SUBMITTED).update(
            status=LlmBatch.STATUS_ENDED, provider_status=provider_status, error=error[:2000], polled_at=now,
            ended_at=now,
        ):  # fmt: skip
            return  # another poller stored it
        requests = list(batch.requests.all())
        calls = []
        for request in requests:
            answer = by_key.get(request.key)
            if answer is None:
                request.outcome, request.error = LlmBatchRequest.OUTCOME_LOST, error or "not in the batch's results"
                continue
            request.outcome, request.text, request.error = answer.outcome, answer.text, answer.error[:2000]
            request.input_tokens, request.output_tokens = answer.input_tokens, answer.output_tokens
            if answer.outcome != "lost":  # a request the provider did not get to was no call
                calls.append(_metered(batch, request, latency_ms))
        LlmBatchRequest.objects.bulk_update(
            requests, ["outcome", "text", "error", "input_tokens", "output_tokens"], batch_size=500
        )
        LlmCall.objects.bulk_create(calls)
        budget_settle(_reservation(batch), sum(c.input_tokens + c.output_tokens for c in calls))
    for call in calls:
        labels = {"provider": call.provider, "model": call.model, "purpose": call.purpose}
        LLM_REQUESTS.labels(**labels, outcome=call.outcome).inc()
        LLM_TOKENS.labels(**labels, direction="input").inc(call.input_tokens)
        LLM_TOKENS.labels(**labels, direction="output").inc(call.output_tokens)


def _metered(batch: LlmBatch, request: LlmBatchRequest, latency_ms: float) -> LlmCall:
    # dated when the batch reserved, as a direct call is dated when it reserved (docs/llm-spend.md)
    ok = request.outcome == LlmBatchRequest.OUTCOME_OK
    return LlmCall(
        organization_id=batch.organization_id, provider=batch.provider, model=batch.model, purpose=request.purpose,
        input_tokens=request.input_tokens, output_tokens=request.output_tokens, latency_ms=latency_ms,
        outcome=LlmCall.OUTCOME_OK if ok else LlmCall.OUTCOME_ERROR, error="" if ok else request.error,
        batch=True, created_at=batch.reserved_at or batch.created_at, subject_type=batch.subject_type,
        subject_id=batch.subject_id,
    )  # fmt: skip


def batch_fail(batch: LlmBatch, error: str, *, now: datetime) -> None:
    """Give up on a batch: its requests are made directly, its reservation released (nothing spent)."""
    with transaction.atomic():
        if not LlmBatch.objects.filter(pk=batch.pk, status=LlmBatch.STATUS_SUBMITTED).update(
            status=LlmBatch.STATUS_FAILED, error=error[:2000], polled_at=now, ended_at=now
        ):
            return
        batch.requests.filter(outcome=LlmBatchRequest.OUTCOME_PENDING).update(
            outcome=LlmBatchRequest.OUTCOME_LOST, error=error[:2000]
        )
        budget_settle(_reservation(batch), 0)
    logger.warning("LLM batch %s failed; its calls will be made directly: %s", batch.id, error)


__all__ = [
    "BATCH_ROUNDS_MAX",
    "BatchSession",
    "LLMDeferred",
    "batch_session",
    "batch_submit",
    "batches_open",
    "batches_poll",
    "request_key",
]
