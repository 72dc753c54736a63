"""LLM calls on behalf of an org: budget check first, then the call, then a metering row.

Every caller (distillation, consolidation) goes through ``llm_complete`` so that cost is always
recorded and an org over its monthly token budget waits instead of spending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.db.models import Sum
from django.utils import timezone

from reasoningbank.ai.llm import LLM, LLMError, LLMResult, LLMUnavailable, llm_from_settings
from reasoningbank.models import LlmCall


class Organization(Protocol):
    """What metering needs of an org (``accounts.models.Organization``; the kernel imports no app)."""

    pk: Any
    plan: str

    def limit(self, name: str) -> int | None: ...


class LLMBudgetExceeded(LLMUnavailable):
    """The org used its plan's monthly LLM tokens: work waits (like no LLM) until the budget resets."""


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


def llm_budget_check(organization: Organization) -> None:
    usage = llm_usage_this_month(organization)
    if usage.limit is not None and usage.total_tokens >= usage.limit:
        raise LLMBudgetExceeded(
            f"the {organization.plan} plan's monthly LLM budget of {usage.limit:,} tokens is used up "
            f"({usage.total_tokens:,} used); work waits until next month or an upgrade"
        )


def llm_complete(
    *,
    organization: Organization,
    purpose: str,
    system: str,
    prompt: str,
    max_tokens: int = 2048,
    llm: LLM | None = None,
    session: Any = None,
    run: Any = None,
) -> LLMResult:
    """Call the configured LLM for ``organization`` and record the call (also when it fails)."""
    llm = llm or llm_from_settings()
    if llm.provider == "none":
        llm.complete(system=system, prompt=prompt, max_tokens=max_tokens)  # raises LLMUnavailable
    llm_budget_check(organization)
    try:
        result = llm.complete(system=system, prompt=prompt, max_tokens=max_tokens)
    except LLMError as exc:
        LlmCall.objects.create(
            organization_id=organization.pk, provider=llm.provider, model=llm.model, purpose=purpose,
            attempts=getattr(exc, "attempts", None) or 1, outcome=LlmCall.OUTCOME_ERROR, error=str(exc)[:2000],
            session=session, run=run,
        )
        raise
    LlmCall.objects.create(
        organization_id=organization.pk, provider=result.provider, model=result.model, purpose=purpose,
        input_tokens=result.input_tokens, output_tokens=result.output_tokens, latency_ms=result.latency_ms,
        attempts=result.attempts, session=session, run=run,
    )
    return result
