"""LLM calls on behalf of an org: the budget reservation first, then the call, then a metering row.

Every caller (distillation, consolidation, ``memory_ask``) goes through ``llm_complete`` so that cost
is always recorded, and a call that would cross one of the org's caps (its own daily or monthly
cap, its plan's monthly budget: ``reasoningbank.ai.budget``) waits instead of spending.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from django.db.models import Model, Sum
from django.utils import timezone

from reasoningbank.ai.budget import LLMBudgetExceeded, budget_reserve, budget_settle, call_cost_of
from reasoningbank.ai.llm import (
    LLM,
    LLMError,
    LLMPermanentError,
    LLMResult,
    LLMTransientError,
    llm_from_settings,
)
from reasoningbank.ai.purposes import purpose_require
from reasoningbank.logging_json import TRACE, log_body
from reasoningbank.metrics import LLM_CACHED_TOKENS, LLM_ERRORS, LLM_LATENCY, LLM_REQUESTS, LLM_TOKENS
from reasoningbank.models import LlmCall
from reasoningbank.tracing import span

logger = logging.getLogger("reasoningbank.llm")


class Organization(Protocol):
    """What metering needs of an org (``accounts.models.Organization``; the kernel imports no app)."""

    pk: Any
    plan: str

    def limit(self, name: str) -> int | None: ...


@dataclass(frozen=True)
class Usage:
    calls: int
    input_tokens: int
    output_tokens: int
    limit: int | None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.total_tokens)


def llm_usage_this_month(organization: Organization) -> Usage:
    start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    totals = LlmCall.objects.filter(organization_id=organization.pk, created_at__gte=start).aggregate(
        i=Sum("input_tokens"), o=Sum("output_tokens")
    )
    calls = LlmCall.objects.filter(organization_id=organization.pk, created_at__gte=start).count()
    return Usage(calls, totals["i"] or 0, totals["o"] or 0, organization.limit("llm_tokens_per_month"))


def llm_complete(
    *,
    organization: Organization,
    purpose: str,
    system: str,
    prompt: str,
    max_tokens: int = 2048,
    llm: LLM | None = None,
    subject: Model | None = None,
) -> LLMResult:
    """Call the configured LLM for ``organization`` and record the call (also when it fails), for
    ``purpose`` (one an app registered: ``reasoningbank.ai.purposes``) and on behalf of ``subject``
    (the run or session it serves, kept as a generic reference: ``LlmCall.objects.for_subject``)."""
    purpose_require(purpose)
    subject_ref = {"subject_type": subject._meta.label_lower, "subject_id": str(subject.pk)} if subject else {}
    llm = llm or llm_from_settings()
    if llm.provider == "none":
        llm.complete(system=system, prompt=prompt, max_tokens=max_tokens)  # raises LLMUnavailable
    # holds the call's likely cost (its ceiling beside it), or raises LLMBudgetExceeded (an LLMUnavailable:
    # the work waits) at a cap: docs/llm-spend.md#how-a-cap-is-kept
    reservation = budget_reserve(
        organization,
        lambda: call_cost_of(organization.pk, purpose=purpose, system=system, prompt=prompt, max_tokens=max_tokens),
    )
    labels = {"provider": llm.provider, "model": llm.model, "purpose": purpose}
    if logger.isEnabledFor(TRACE):  # bodies only at TRACE, scrubbed and truncated (docs/observability.md#logs)
        logger.log(TRACE, "LLM prompt", extra={**labels, "prompt": log_body(prompt)})
    try:
        result = _complete_traced(llm, purpose, system=system, prompt=prompt, max_tokens=max_tokens)
    except LLMError as exc:
        budget_settle(reservation, 0)
        LlmCall.objects.create(
            organization_id=organization.pk, provider=llm.provider, model=llm.model, purpose=purpose,
            attempts=getattr(exc, "attempts", None) or 1, outcome=LlmCall.OUTCOME_ERROR, error=str(exc)[:2000],
            created_at=reservation.at, **subject_ref,
        )
        LLM_REQUESTS.labels(**labels, outcome="error").inc()
        LLM_ERRORS.labels(**labels, error=_error_kind(exc)).inc()
        logger.warning(
            "LLM call failed: %s", type(exc).__name__,
            extra={**labels, "attempts": getattr(exc, "attempts", None) or 1, "error": _error_kind(exc)},
        )
        raise
    except BaseException:  # a bug, a cancelled task: the hold is released, nothing was spent that we know of
        budget_settle(reservation, 0)
        raise
    # the row and the budget's counters count the call in the period it started in (a call across
    # midnight is the day's that reserved it), so the spend page's days equal the counters
    LlmCall.objects.create(
        organization_id=organization.pk, provider=result.provider, model=result.model, purpose=purpose,
        input_tokens=result.input_tokens, output_tokens=result.output_tokens, latency_ms=result.latency_ms,
        attempts=result.attempts, tokens_estimated=result.tokens_estimated, created_at=reservation.at,
        cached_input_tokens=result.cached_input_tokens, cache_write_tokens=result.cache_write_tokens,
        **subject_ref,
    )
    budget_settle(reservation, result.input_tokens + result.output_tokens)
    LLM_REQUESTS.labels(**labels, outcome="ok").inc()
    LLM_TOKENS.labels(**labels, direction="input").inc(result.input_tokens)
    LLM_TOKENS.labels(**labels, direction="output").inc(result.output_tokens)
    if result.cached_input_tokens:  # a share of the input above, counted apart (docs/llm.md#prompt-caching)
        LLM_CACHED_TOKENS.labels(**labels, kind="read").inc(result.cached_input_tokens)
    if result.cache_write_tokens:
        LLM_CACHED_TOKENS.labels(**labels, kind="write").inc(result.cache_write_tokens)
    LLM_LATENCY.labels(**labels).observe(result.latency_ms / 1000)
    logger.debug(
        "LLM call %s: %d+%d tokens in %.0f ms", purpose, result.input_tokens, result.output_tokens, result.latency_ms,
        extra={**labels, "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
               "latency_ms": round(result.latency_ms, 1), "attempts": result.attempts},
    )
    if logger.isEnabledFor(TRACE):
        logger.log(TRACE, "LLM response", extra={**labels, "response": log_body(result.text)})
    return result


def _complete_traced(llm: LLM, purpose: str, *, system: str, prompt: str, max_tokens: int) -> LLMResult:
    """The provider call in its ``llm.<purpose>`` span (``llm.distill``, ``llm.synthesize``, …):
    provider, model, tokens, latency, attempts; the prompt's length, never the prompt or the reply."""
    with span(
        f"llm.{purpose}", provider=llm.provider, model=llm.model, purpose=purpose, prompt_length=len(prompt)
    ) as current:
        result = llm.complete(system=system, prompt=prompt, max_tokens=max_tokens)
        current.set_attributes(
            {
                "prompt_tokens": result.input_tokens,
                "cached_prompt_tokens": result.cached_input_tokens,
                "completion_tokens": result.output_tokens,
                "latency_ms": round(result.latency_ms, 1),
                "attempts": result.attempts,
            }
        )
        return result


def _error_kind(exc: LLMError) -> str:
    """A bounded label: transient (outlasted the retries), permanent (the provider refused), other."""
    if isinstance(exc, LLMTransientError):
        return "transient"
    if isinstance(exc, LLMPermanentError):
        return "permanent"
    return "other"


__all__ = ["LLMBudgetExceeded", "Usage", "llm_complete", "llm_usage_this_month"]
