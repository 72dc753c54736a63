"""LLM budgets in the database (docs/llm-spend.md): every call reserves its estimated tokens against
its organization's counters for the UTC day and month before it is made, and settles to what the
provider reported after. The reservation locks both counter rows (always month before day, so two
workers never deadlock) and refuses a call that would cross a cap in force (``LLMBudgetExceeded``):
under any number of concurrent workers the tokens spent and in flight never pass a cap. The plan's
``llm_tokens_per_month`` is one of those caps: there is one mechanism, not two.

Crossing an organization's alert threshold sends ``llm_budget_alert`` once per period (a conditional
update claims it): accounts records the audit row, webhooks publish ``llm.budget_alert``, the
dashboard shows a banner while the period lasts.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.db.models.functions import Greatest
from django.dispatch import Signal
from django.utils import timezone

from reasoningbank.ai.budget_rules import (
    DEFAULT_ALERT_PERCENT,
    PERIODS,
    Cap,
    alert_threshold,
    caps_in_force,
    fits,
    period_end,
    period_start,
    tokens_estimate,
)
from reasoningbank.ai.llm import LLMUnavailable
from reasoningbank.health import Banner
from reasoningbank.metrics import LLM_BUDGET_ALERTS, LLM_BUDGET_REFUSALS
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall

logger = logging.getLogger("reasoningbank.llm")

# sent once per period when an organization's spend reaches its alert threshold, after the commit;
# kwargs: organization_id, data (cap, source, limit, used, threshold, percent, period_start, resets_at:
# the audit row's data and the llm.budget_alert webhook event's, docs/webhooks.md#events)
llm_budget_alert = Signal()


class Organization(Protocol):
    """What budgets need of an org (``accounts.models.Organization``; the kernel imports no app)."""

    pk: Any
    plan: str

    def limit(self, name: str) -> int | None: ...


class LLMBudgetExceeded(LLMUnavailable):
    """A call would cross a cap in force: the work waits until ``resets_at`` (the period's turn) or until
    the cap is raised. ``cap`` names the cap (``daily`` or ``monthly``, ``source`` organization or plan)."""

    def __init__(self, message: str, *, cap: Cap, used: int, needed: int, resets_at: datetime) -> None:
        super().__init__(message)
        self.cap, self.used, self.needed, self.resets_at = cap, used, needed, resets_at


@dataclass
class Reservation:
    """Tokens held for one call in flight, on the counter rows of its day and month."""

    organization_id: Any
    tokens: int
    at: datetime
    period_ids: list[int] = field(default_factory=list)
    caps: list[Cap] = field(default_factory=list)
    alert_percent: int | None = None
    settled: bool = False


def budget_caps(organization: Organization) -> tuple[list[Cap], int | None]:
    """The caps in force for ``organization`` and its alert percentage."""
    budget = LlmBudget.objects.filter(organization_id=organization.pk).first()
    caps = caps_in_force(
        daily=budget.daily_tokens if budget else None,
        monthly=budget.monthly_tokens if budget else None,
        plan_monthly=organization.limit("llm_tokens_per_month"),
        plan=organization.plan,
    )
    return caps, (budget.alert_percent if budget else DEFAULT_ALERT_PERCENT)


def call_estimate(*, system: str, prompt: str, max_tokens: int) -> int:
    return tokens_estimate(
        system=system, prompt=prompt, max_tokens=max_tokens, bytes_per_token=settings.LLM_BUDGET_BYTES_PER_TOKEN
    )


def _period_locked(organization_id: Any, period: str, start: date) -> LlmBudgetPeriod:
    """The period's counter row, locked until the transaction ends; made on first use with what the
    metered rows already hold for the period (calls made before budgets existed count too)."""
    rows = LlmBudgetPeriod.objects.select_for_update()
    row = rows.filter(organization_id=organization_id, period=period, start=start).first()
    if row is not None:
        return row
    begins = datetime.combine(start, time.min, tzinfo=UTC)
    spent = LlmCall.objects.filter(
        organization_id=organization_id, created_at__gte=begins, created_at__lt=period_end(period, start)
    ).aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    LlmBudgetPeriod.objects.bulk_create(
        [
            LlmBudgetPeriod(
                organization_id=organization_id,
                period=period,
                start=start,
                used_tokens=(spent["i"] or 0) + (spent["o"] or 0),
            )
        ],
        ignore_conflicts=True,  # another worker made it first: lock theirs
    )
    return rows.get(organization_id=organization_id, period=period, start=start)


def budget_reserve(organization: Organization, tokens: int, *, now: datetime | None = None) -> Reservation:
    """Hold ``tokens`` for one call against the organization's day and month, or raise
    ``LLMBudgetExceeded`` naming the first cap the call would cross (nothing held then)."""
    now = now or timezone.now()
    caps, alert_percent = budget_caps(organization)
    refused: LLMBudgetExceeded | None = None
    with transaction.atomic():
        rows = {period: _period_locked(organization.pk, period, period_start(period, now)) for period in PERIODS}
        for cap in caps:
            row = rows[cap.period]
            if not fits(used=row.used_tokens, reserved=row.reserved_tokens, tokens=tokens, limit=cap.limit):
                resets_at = period_end(cap.period, row.start)
                refused = LLMBudgetExceeded(
                    f"{cap.describe()} is reached ({row.used_tokens:,} used, {row.reserved_tokens:,} in flight; "
                    f"this call needs up to {tokens:,}); work waits until "
                    f"{resets_at:%Y-%m-%d %H:%M} UTC or a higher cap",
                    cap=cap,
                    used=row.used_tokens,
                    needed=tokens,
                    resets_at=resets_at,
                )
                LlmBudgetPeriod.objects.filter(pk=row.pk, reached_at__isnull=True).update(reached_at=now)
                break
        else:
            LlmBudgetPeriod.objects.filter(pk__in=[row.pk for row in rows.values()]).update(
                reserved_tokens=F("reserved_tokens") + tokens
            )
    if refused is not None:
        LLM_BUDGET_REFUSALS.labels(cap=refused.cap.name, source=refused.cap.source).inc()
        raise refused
    return Reservation(
        organization_id=organization.pk,
        tokens=tokens,
        at=now,
        period_ids=[row.pk for row in rows.values()],
        caps=caps,
        alert_percent=alert_percent,
    )


def budget_settle(reservation: Reservation, used_tokens: int) -> None:
    """Release the call's hold and count what it spent (0 for a failed call); then the soft alert, when
    this call took a period past its threshold. Settling twice does nothing."""
    if reservation.settled:
        return
    reservation.settled = True
    if used_tokens > reservation.tokens:
        logger.warning(
            "an LLM call spent %d tokens, more than the %d it reserved (LLM_BUDGET_BYTES_PER_TOKEN is too high "
            "for this text)",
            used_tokens,
            reservation.tokens,
        )
    # one row at a time, month first: a statement updating both could lock them in the other order than
    # a reservation holding the month and waiting for the day, and the two would deadlock
    for period_id in reservation.period_ids:
        LlmBudgetPeriod.objects.filter(pk=period_id).update(
            reserved_tokens=Greatest(F("reserved_tokens") - reservation.tokens, 0),
            used_tokens=F("used_tokens") + used_tokens,
        )
    if used_tokens > 0:
        _alert_if_crossed(reservation)


def _alert_if_crossed(reservation: Reservation) -> None:
    rows = {row.period: row for row in LlmBudgetPeriod.objects.filter(pk__in=reservation.period_ids)}
    for cap in reservation.caps:
        row = rows.get(cap.period)
        threshold = alert_threshold(cap.limit, reservation.alert_percent)
        if row is None or threshold is None or row.used_tokens < threshold:
            continue
        # the one worker whose update claims the period sends the alert: once per period
        claimed = LlmBudgetPeriod.objects.filter(pk=row.pk, alerted_at__isnull=True).update(alerted_at=timezone.now())
        if not claimed:
            continue
        LLM_BUDGET_ALERTS.labels(cap=cap.name, source=cap.source).inc()
        logger.warning(
            "organization %s reached %d%% of %s (%d used)",
            reservation.organization_id,
            reservation.alert_percent,
            cap.describe(),
            row.used_tokens,
        )
        data = {
            "cap": cap.name,
            "source": cap.source,
            "limit": cap.limit,
            "used": row.used_tokens,
            "threshold": threshold,
            "percent": reservation.alert_percent,
            "period_start": row.start.isoformat(),
            "resets_at": period_end(cap.period, row.start).isoformat(),
        }
        transaction.on_commit(
            functools.partial(
                llm_budget_alert.send, sender=LlmBudgetPeriod, organization_id=reservation.organization_id, data=data
            )
        )


@dataclass(frozen=True)
class CapStatus:
    """One cap as the dashboard and the API show it: spent, in flight, left, alerted, reached."""

    cap: Cap
    used: int
    reserved: int
    period_start: date
    resets_at: datetime
    alert_at: int | None
    alerted: bool
    reached: bool

    @property
    def remaining(self) -> int:
        return max(0, self.cap.limit - self.used - self.reserved)

    @property
    def percent(self) -> float:
        return min(100.0, round(self.used * 100 / self.cap.limit, 1)) if self.cap.limit else 100.0


def budget_status(organization: Organization, *, now: datetime | None = None) -> list[CapStatus]:
    """Each cap in force with its current period's counter (no row yet: the metered rows' sum)."""
    now = now or timezone.now()
    caps, alert_percent = budget_caps(organization)
    statuses = []
    for cap in caps:
        start = period_start(cap.period, now)
        row = LlmBudgetPeriod.objects.filter(organization_id=organization.pk, period=cap.period, start=start).first()
        if row is None:
            begins = datetime.combine(start, time.min, tzinfo=UTC)
            spent = LlmCall.objects.filter(organization_id=organization.pk, created_at__gte=begins).aggregate(
                i=Sum("input_tokens"), o=Sum("output_tokens")
            )
            used, reserved, alerted, reached = (spent["i"] or 0) + (spent["o"] or 0), 0, False, False
        else:
            used, reserved = row.used_tokens, row.reserved_tokens
            alerted, reached = row.alerted_at is not None, row.reached_at is not None or used >= cap.limit
        statuses.append(
            CapStatus(
                cap=cap,
                used=used,
                reserved=reserved,
                period_start=start,
                resets_at=period_end(cap.period, start),
                alert_at=alert_threshold(cap.limit, alert_percent),
                alerted=alerted,
                reached=reached,
            )
        )
    return statuses


def budget_touch(organization_id: Any) -> None:
    """The organization's caps moved (its admins, a plan change): work waiting for the budget is tried
    again at the next resume (``memories``' and ``consolidation``'s resume tasks compare this time)."""
    now = timezone.now()
    LlmBudget.objects.update_or_create(organization_id=organization_id, defaults={"updated_at": now})
    # a cap reached before the change is shown as reached again only when a call waits on the new one
    for period in PERIODS:  # one row at a time, in the reservations' order (never a deadlock with them)
        LlmBudgetPeriod.objects.filter(
            organization_id=organization_id, period=period, start=period_start(period, now)
        ).update(reached_at=None)


def budget_banners(statuses: list[CapStatus]) -> list[Banner]:
    """The dashboard's banner for a cap that is reached (work waits) or past its alert threshold, for
    the rest of its period (docs/llm-spend.md#the-alert)."""
    banners = []
    for status in statuses:
        turn = f"{status.resets_at:%Y-%m-%d %H:%M} UTC"
        if status.reached or status.remaining == 0:
            message = (
                f"{status.cap.describe()[0].upper()}{status.cap.describe()[1:]} is reached: distillation and "
                f"consolidation wait until {turn}, and memory_ask answers limit_exceeded."
            )
        elif status.alerted:
            message = (
                f"{status.percent:g}% of {status.cap.describe()} is used ({status.used:,} tokens); at the cap, "
                f"LLM work waits until {turn}."
            )
        else:
            continue
        banners.append(Banner("budget", message, "Owners and admins can change the caps under Settings → LLM spend."))
    return banners
