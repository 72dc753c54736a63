"""LLM budgets in the database (docs/llm-spend.md): every call reserves its likely cost (its prompt and
its kind's usual reply) against its organization's counters for the UTC day and month before it is
made, with its ceiling (the most it can cost) beside it, and settles to what the provider reported
after. The reservation locks both counter rows (always month before day, so two workers never
deadlock) and, for every cap in force, refuses a call once the spend and the likely costs in flight
leave no room for it (``LLMBudgetExceeded``), and holds it back while the calls in flight could fill
the cap at their ceilings (``budget_rules.admission``). A call is charged what the provider reported
up to its ceiling: under any number of concurrent workers, on any number of machines, the spend
passes a cap by at most one call. The plan's ``llm_tokens_per_month`` is one of those caps: there is
one mechanism, not two.

Crossing an organization's alert threshold sends ``llm_budget_alert`` once per period (a conditional
update claims it): accounts records the audit row, webhooks publish ``llm.budget_alert``, the
dashboard shows a banner while the period lasts.

The caps are set and read by accounts' budgets feature (``accounts/budgets/``); why the check lives here,
beside the metering, and not there: docs/llm-spend.md#how-a-cap-is-kept.
"""

from __future__ import annotations

import functools
import logging
import random
import time as clock
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Sum
from django.db.models.functions import Greatest
from django.dispatch import Signal
from django.utils import timezone

from reasoningbank.ai.budget_rules import (
    ADMIT,
    DEFAULT_ALERT_PERCENT,
    PERIODS,
    REFUSE,
    REPLY_SAMPLES,
    CallCost,
    Cap,
    admission,
    alert_threshold,
    call_cost,
    caps_in_force,
    charge,
    period_end,
    period_start,
    tokens_ceiling,
)
from reasoningbank.ai.llm import LLMUnavailable, tokens_estimate
from reasoningbank.health import Banner
from reasoningbank.metrics import LLM_BUDGET_ALERTS, LLM_BUDGET_HOLDS, LLM_BUDGET_REFUSALS
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall

logger = logging.getLogger("reasoningbank.llm")

# the window a purpose's usual reply is read from: recent enough to follow a model or prompt change
RECENT_REPLIES = timedelta(days=7)
# a call held back (calls in flight could fill a cap) asks again after this long at first, doubling
# up to the second figure; randomised, so waiting workers do not ask in step
WAIT_FIRST_SECONDS, WAIT_MAX_SECONDS = 0.02, 0.5

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

    def __init__(
        self, message: str, *, cap: Cap, used: int, needed: int, resets_at: datetime, reserved: int = 0
    ) -> None:
        super().__init__(message)
        self.cap, self.used, self.needed, self.resets_at = cap, used, needed, resets_at
        self.reserved = reserved


@dataclass
class Reservation:
    """Tokens held for one call in flight (its likely cost, and its ceiling: the most it may be
    charged), on the counter rows of its day and month."""

    organization_id: Any
    tokens: int
    at: datetime
    ceiling: int = 0
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


def call_ceiling(*, system: str, prompt: str, max_tokens: int) -> int:
    """The most a call can cost (``budget_rules.tokens_ceiling`` with ``LLM_BUDGET_BYTES_PER_TOKEN``)."""
    return tokens_ceiling(
        system=system, prompt=prompt, max_tokens=max_tokens, bytes_per_token=settings.LLM_BUDGET_BYTES_PER_TOKEN
    )


def call_cost_of(organization_id: Any, *, purpose: str, system: str, prompt: str, max_tokens: int) -> CallCost:
    """What a call of ``purpose`` is likely to cost for the organization, and its ceiling: the prompt
    counted as the metering counts a server's unreported tokens (``llm.tokens_estimate``), the reply as
    the average of the purpose's last ``REPLY_SAMPLES`` answered calls in the past week (the
    organization's own: another's replies never move its reservations)."""
    since = timezone.now() - RECENT_REPLIES
    recent = list(
        LlmCall.objects.filter(
            organization_id=organization_id, purpose=purpose, outcome=LlmCall.OUTCOME_OK, created_at__gte=since
        )
        .order_by("-created_at")
        .values_list("output_tokens", flat=True)[:REPLY_SAMPLES]
    )
    return call_cost(
        prompt_tokens=tokens_estimate(system) + tokens_estimate(prompt),
        recent_replies=recent,
        max_tokens=max_tokens,
        ceiling=call_ceiling(system=system, prompt=prompt, max_tokens=max_tokens),
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


def budget_reserve(
    organization: Organization,
    cost: CallCost | Callable[[], CallCost],
    *,
    now: datetime | None = None,
    wait_seconds: float | None = None,
    sleep: Callable[[float], None] = clock.sleep,
) -> Reservation:
    """Hold ``cost`` for one call against the organization's day and month, or raise
    ``LLMBudgetExceeded`` naming the first cap that refuses it (nothing held then). A call the calls
    in flight could crowd out (``budget_rules.WAIT``) asks again until they settled, for at most
    ``wait_seconds`` (``LLM_BUDGET_WAIT_SECONDS``), and is then refused until a minute later; inside
    a transaction it never waits (its row locks would be held while it sleeps). A ``cost`` given as a
    function is asked again at each attempt: the replies that settled meanwhile tell the usual reply."""
    caps, alert_percent = budget_caps(organization)
    wait = settings.LLM_BUDGET_WAIT_SECONDS if wait_seconds is None else wait_seconds
    deadline = clock.monotonic() + (0 if connection.in_atomic_block else wait)
    delay = WAIT_FIRST_SECONDS
    while True:
        at = now or timezone.now()
        attempt = cost() if callable(cost) else cost
        outcome = _reserve_once(organization.pk, caps, attempt, at)
        if isinstance(outcome, list):
            return Reservation(
                organization_id=organization.pk,
                tokens=attempt.likely,
                ceiling=attempt.ceiling,
                at=at,
                period_ids=[row.pk for row in outcome],
                caps=caps,
                alert_percent=alert_percent,
            )
        refused, waiting = outcome
        if refused is None and clock.monotonic() < deadline:
            if delay == WAIT_FIRST_SECONDS:  # counted once per call held back, not per look
                LLM_BUDGET_HOLDS.labels(cap=waiting[0].name, source=waiting[0].source).inc()
            sleep(min(delay * random.uniform(0.5, 1.0), max(0.0, deadline - clock.monotonic())))
            delay = min(delay * 2, WAIT_MAX_SECONDS)
            continue
        refused = refused or _crowded_out(waiting, attempt, at)
        LLM_BUDGET_REFUSALS.labels(cap=refused.cap.name, source=refused.cap.source).inc()
        raise refused


def _reserve_once(
    organization_id: Any, caps: list[Cap], cost: CallCost, now: datetime
) -> list[LlmBudgetPeriod] | tuple[LLMBudgetExceeded | None, tuple[Cap, LlmBudgetPeriod]]:
    """One admission under the rows' locks: the locked rows once the call is held, or the refusal (or,
    ``None``, the cap it waits on and its row)."""
    waiting: tuple[Cap, LlmBudgetPeriod] | None = None
    with transaction.atomic():
        rows = {period: _period_locked(organization_id, period, period_start(period, now)) for period in PERIODS}
        for cap in caps:
            row = rows[cap.period]
            verdict = admission(
                used=row.used_tokens, reserved=row.reserved_tokens, ceilings=row.ceiling_tokens, cost=cost,
                limit=cap.limit,
            )  # fmt: skip
            if verdict == REFUSE:
                LlmBudgetPeriod.objects.filter(pk=row.pk, reached_at__isnull=True).update(reached_at=now)
                return _refusal(cap, row, cost), (cap, row)
            if verdict != ADMIT and waiting is None:
                waiting = (cap, row)
        if waiting is not None:
            return None, waiting
        LlmBudgetPeriod.objects.filter(pk__in=[row.pk for row in rows.values()]).update(
            reserved_tokens=F("reserved_tokens") + cost.likely, ceiling_tokens=F("ceiling_tokens") + cost.ceiling
        )
    return list(rows.values())


def _refusal(cap: Cap, row: LlmBudgetPeriod, cost: CallCost) -> LLMBudgetExceeded:
    resets_at = period_end(cap.period, row.start)
    return LLMBudgetExceeded(
        f"{cap.describe()} is reached ({row.used_tokens:,} used, {row.reserved_tokens:,} held for calls in "
        f"flight; this call needs about {cost.likely:,}); work waits until {resets_at:%Y-%m-%d %H:%M} UTC or a "
        f"higher cap",
        cap=cap,
        used=row.used_tokens,
        reserved=row.reserved_tokens,
        needed=cost.likely,
        resets_at=resets_at,
    )


def _crowded_out(waiting: tuple[Cap, LlmBudgetPeriod], cost: CallCost, now: datetime) -> LLMBudgetExceeded:
    """The refusal of a call that waited its time while calls in flight could fill ``cap``: it may run
    once they settled, so the work waits a minute, not until the period turns."""
    cap, row = waiting
    retry_at = now + timedelta(minutes=1)
    return LLMBudgetExceeded(
        f"{cap.describe()} is nearly reached: {row.used_tokens:,} used and calls in flight that may spend up to "
        f"{row.ceiling_tokens:,} leave no room for this call's {cost.ceiling:,} at most; work waits until "
        f"{retry_at:%Y-%m-%d %H:%M} UTC, when they have settled",
        cap=cap,
        used=row.used_tokens,
        reserved=row.reserved_tokens,
        needed=cost.ceiling,
        resets_at=retry_at,
    )


def budget_settle(reservation: Reservation, used_tokens: int) -> None:
    """Release the call's hold and charge what it spent (0 for a failed call), up to its ceiling: a
    report above the ceiling is counted apart as over-reported (docs/llm-spend.md#over-reports); then
    the soft alert, when this call took a period past its threshold. Settling twice does nothing."""
    if reservation.settled:
        return
    reservation.settled = True
    charged = charge(used_tokens, reservation.ceiling)
    over = max(0, used_tokens - charged)
    if over:
        logger.warning(
            "the LLM provider reported %d tokens for a call that could spend at most %d (its prompt and "
            "max_tokens): %d are counted as over-reported, not against the caps (if the prompts are dense "
            "text, LLM_BUDGET_BYTES_PER_TOKEN=1 makes the ceiling strict)",
            used_tokens,
            reservation.ceiling,
            over,
        )
    # one row at a time, month first: a statement updating both could lock them in the other order than
    # a reservation holding the month and waiting for the day, and the two would deadlock
    for period_id in reservation.period_ids:
        LlmBudgetPeriod.objects.filter(pk=period_id).update(
            reserved_tokens=Greatest(F("reserved_tokens") - reservation.tokens, 0),
            ceiling_tokens=Greatest(F("ceiling_tokens") - reservation.ceiling, 0),
            used_tokens=F("used_tokens") + charged,
            over_reported_tokens=F("over_reported_tokens") + over,
        )
    if charged > 0:
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
    """One cap as the dashboard and the API show it: spent, in flight, left, alerted, reached, and the
    tokens a provider reported beyond what its calls could spend (shown, not counted in ``used``)."""

    cap: Cap
    used: int
    reserved: int
    period_start: date
    resets_at: datetime
    alert_at: int | None
    alerted: bool
    reached: bool
    over_reported: int = 0

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
            over_reported = 0
        else:
            used, reserved, over_reported = row.used_tokens, row.reserved_tokens, row.over_reported_tokens
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
                over_reported=over_reported,
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
