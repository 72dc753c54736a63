"""An organization's LLM spend, read from its metered calls (``LlmCall``, one row per call:
docs/llm-spend.md#the-spend-page): tokens and calls per UTC day by purpose, provider and model, with an
estimated cost from the operator's price table (``LlmPrice``). The dashboard's page and the REST
endpoint read the same rows through the access layer; staff's top spenders read every organization's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.access import Principal, access_filter
from reasoningbank.ai.batch_providers import BATCH_PRICE_FACTOR
from reasoningbank.ai.purposes import purpose_label
from reasoningbank.models import LlmCall, LlmPrice

MAX_DAYS = 92  # a quarter: the page's and the API's longest window
MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    input_per_million: Decimal
    output_per_million: Decimal
    currency: str
    # prompt-cache prices; None: those tokens cost the input price (the operator set none)
    cached_input_per_million: Decimal | None = None
    cache_write_per_million: Decimal | None = None


class PriceTable:
    """The operator's prices: a model's own row, else its provider's row without a model, else none."""

    def __init__(self) -> None:
        self.prices = {
            (p.provider, p.model): Price(
                p.input_per_million,
                p.output_per_million,
                p.currency,
                p.cached_input_per_million,
                p.cache_write_per_million,
            )
            for p in LlmPrice.objects.all()
        }

    def of(self, provider: str, model: str) -> Price | None:
        return self.prices.get((provider, model)) or self.prices.get((provider, ""))

    def cost(
        self,
        provider: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
        *,
        batch_input_tokens: int = 0,
        batch_output_tokens: int = 0,
    ) -> tuple[Decimal, str] | None:
        """What the tokens cost: ``input_tokens`` counts every prompt token, the cached ones included, so
        those read from or written to the prompt cache are taken out and priced at their own rates; those
        answered through a batch API (``batch_*``, counted in the totals too) at the providers' batch
        discount (docs/llm-spend.md#batch-mode)."""
        price = self.of(provider, model)
        if price is None:
            return None
        read_price = (
            price.input_per_million if price.cached_input_per_million is None else price.cached_input_per_million
        )
        write_price = (
            price.input_per_million if price.cache_write_per_million is None else price.cache_write_per_million
        )
        uncached = max(0, input_tokens - cached_input_tokens - cache_write_tokens)
        full = (
            uncached * price.input_per_million
            + cached_input_tokens * read_price
            + cache_write_tokens * write_price
            + output_tokens * price.output_per_million
        )
        batched = batch_input_tokens * price.input_per_million + batch_output_tokens * price.output_per_million
        amount = (full - batched + batched * BATCH_PRICE_FACTOR) / MILLION
        return amount.quantize(Decimal("0.000001")), price.currency


@dataclass
class SpendRow:
    day: date
    purpose: str
    provider: str
    model: str
    calls: int
    failed: int
    input_tokens: int
    output_tokens: int
    estimated_cost: Decimal | None
    currency: str | None
    cached_input_tokens: int = 0  # of input_tokens: read from the provider's prompt cache
    cache_write_tokens: int = 0  # of input_tokens: written to it

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def purpose_label(self) -> str:
        return purpose_label(self.purpose)


@dataclass
class Spend:
    since: date
    until: date  # inclusive
    rows: list[SpendRow]
    calls: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    # per currency; calls of a model without a price count in ``unpriced_calls``
    estimated_cost: dict[str, Decimal] = field(default_factory=dict)
    unpriced_calls: int = 0
    by_purpose: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def spend_window(days: int, *, now: datetime | None = None) -> tuple[date, date]:
    """The last ``days`` UTC days, today included."""
    today = (now or timezone.now()).astimezone(UTC).date()
    return today - timedelta(days=days - 1), today


def _aggregate(calls: Any, since: date, until: date) -> Any:
    begins = datetime.combine(since, time.min, tzinfo=UTC)
    ends = datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC)
    return (
        calls.filter(created_at__gte=begins, created_at__lt=ends)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", "purpose", "provider", "model")
        .annotate(
            # before the totals, whose names then stand for the aggregates rather than the columns
            batch_input_tokens=Sum("input_tokens", filter=Q(batch=True)),
            batch_output_tokens=Sum("output_tokens", filter=Q(batch=True)),
            calls=Count("id"),
            failed=Count("id", filter=Q(outcome=LlmCall.OUTCOME_ERROR)),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cached_input_tokens=Sum("cached_input_tokens"),
            cache_write_tokens=Sum("cache_write_tokens"),
        )
        .order_by("-day", "purpose", "provider", "model")
    )


def spend_of(principal: Principal, *, days: int = 30, now: datetime | None = None) -> Spend:
    """The principal's organization's spend over the last ``days`` UTC days (1 to ``MAX_DAYS``)."""
    since, until = spend_window(days, now=now)
    prices = PriceTable()
    spend = Spend(since=since, until=until, rows=[])
    counted = ("calls", "failed", "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")
    purposes: dict[str, dict[str, Any]] = defaultdict(lambda: dict.fromkeys(counted, 0))
    for row in _aggregate(access_filter(LlmCall, principal), since, until):
        input_tokens, output_tokens = row["input_tokens"] or 0, row["output_tokens"] or 0
        cached, written = row["cached_input_tokens"] or 0, row["cache_write_tokens"] or 0
        cost = prices.cost(
            row["provider"],
            row["model"],
            input_tokens,
            output_tokens,
            cached,
            written,
            batch_input_tokens=row["batch_input_tokens"] or 0,
            batch_output_tokens=row["batch_output_tokens"] or 0,
        )
        spend.rows.append(
            SpendRow(
                day=row["day"],
                purpose=row["purpose"],
                provider=row["provider"],
                model=row["model"],
                calls=row["calls"],
                failed=row["failed"],
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                estimated_cost=cost[0] if cost else None,
                currency=cost[1] if cost else None,
                cached_input_tokens=cached,
                cache_write_tokens=written,
            )
        )
        spend.calls += row["calls"]
        spend.failed += row["failed"]
        spend.input_tokens += input_tokens
        spend.output_tokens += output_tokens
        spend.cached_input_tokens += cached
        spend.cache_write_tokens += written
        if cost is None:
            spend.unpriced_calls += row["calls"]
        else:
            spend.estimated_cost[cost[1]] = spend.estimated_cost.get(cost[1], Decimal(0)) + cost[0]
        totals = purposes[row["purpose"]]
        for key, value in (
            ("calls", row["calls"]),
            ("failed", row["failed"]),
            ("input_tokens", input_tokens),
            ("output_tokens", output_tokens),
            ("cached_input_tokens", cached),
            ("cache_write_tokens", written),
        ):
            totals[key] += value
    spend.by_purpose = sorted(
        (
            {
                "purpose": name,
                "label": purpose_label(name),
                **totals,
                "total_tokens": totals["input_tokens"] + totals["output_tokens"],
            }
            for name, totals in purposes.items()
        ),
        key=lambda item: (-item["total_tokens"], item["purpose"]),
    )
    return spend


@dataclass(frozen=True)
class Spender:
    organization_id: int
    slug: str
    name: str
    plan: str
    calls: int
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def top_spenders(*, days: int = 30, limit: int = 10, now: datetime | None = None) -> list[Spender]:
    """Every organization's LLM tokens over the last ``days`` UTC days, the biggest first: the staff's
    view on the system page (never shown to an organization's members)."""
    since, _ = spend_window(days, now=now)
    rows = (
        LlmCall.objects.filter(created_at__gte=datetime.combine(since, time.min, tzinfo=UTC))
        .values("organization_id", "organization__slug", "organization__name", "organization__plan")
        .annotate(calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"))
    )
    spenders = [
        Spender(
            organization_id=row["organization_id"],
            slug=row["organization__slug"],
            name=row["organization__name"],
            plan=row["organization__plan"],
            calls=row["calls"],
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
        )
        for row in rows
    ]
    spenders.sort(key=lambda s: (-s.total_tokens, s.slug))
    return spenders[:limit]
