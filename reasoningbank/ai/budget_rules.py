"""The arithmetic of LLM budgets (docs/llm-spend.md): the periods a cap counts over (UTC days and
months), the caps in force for an organization, the estimate a call reserves before it is made, and
the alert threshold. Pure: ``reasoningbank.ai.budget`` does the database part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

DAY, MONTH = "day", "month"
PERIODS = (MONTH, DAY)  # the order rows are locked in: every worker the same, so two never deadlock

DEFAULT_ALERT_PERCENT = 80  # an organization that set no budget is warned at 80 % of its plan's

# chat formats add a few tokens per message (role markers, the reply's priming) to what the text counts
MESSAGE_OVERHEAD_TOKENS = 32


@dataclass(frozen=True)
class Cap:
    """One cap in force: ``name`` is what an answer or a message calls it (``daily``, ``monthly``),
    ``source`` who set it (``organization``: its admins; ``plan``: the plan's ``llm_tokens_per_month``)."""

    name: str
    period: str
    limit: int
    source: str
    plan: str = ""

    def describe(self) -> str:
        if self.source == "plan":
            return f"the {self.plan} plan's monthly LLM budget of {self.limit:,} tokens"
        return f"the organization's {self.name} LLM cap of {self.limit:,} tokens"


def caps_in_force(*, daily: int | None, monthly: int | None, plan_monthly: int | None, plan: str) -> list[Cap]:
    """The caps a call must fit under: the organization's daily cap, and per month the smaller of its
    own monthly cap and its plan's (the one that bites is the one named)."""
    caps: list[Cap] = []
    if daily is not None:
        caps.append(Cap("daily", DAY, daily, "organization"))
    if monthly is not None and (plan_monthly is None or monthly <= plan_monthly):
        caps.append(Cap("monthly", MONTH, monthly, "organization"))
    elif plan_monthly is not None:
        caps.append(Cap("monthly", MONTH, plan_monthly, "plan", plan))
    return caps


def period_start(period: str, now: datetime) -> date:
    """The first day of the UTC day or month ``now`` falls in."""
    day = now.astimezone(UTC).date()
    return day if period == DAY else day.replace(day=1)


def period_end(period: str, start: date) -> datetime:
    """When the period that began on ``start`` turns (UTC midnight): work waiting on it resumes then."""
    if period == DAY:
        following = start + timedelta(days=1)
    else:
        following = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return datetime.combine(following, time.min, tzinfo=UTC)


def tokens_estimate(*, system: str, prompt: str, max_tokens: int, bytes_per_token: float) -> int:
    """An upper bound of what a call can spend, reserved before it is made: the reply is bounded by
    ``max_tokens`` (the provider stops there); the prompt by its UTF-8 bytes over ``bytes_per_token``
    (1 is a strict bound for the byte-level tokenizers both vendors use; English prose and code run at
    3.5 to 4.5 bytes a token, so the default 2 keeps a factor-two margin)."""
    text_bytes = len(system.encode("utf-8")) + len(prompt.encode("utf-8"))
    return math.ceil(text_bytes / bytes_per_token) + MESSAGE_OVERHEAD_TOKENS + max(0, int(max_tokens))


def fits(*, used: int, reserved: int, tokens: int, limit: int) -> bool:
    """Whether a call reserving ``tokens`` stays within ``limit`` with what is spent and in flight
    (a call that would cross the cap waits: exactly reaching it is allowed)."""
    return used + reserved + tokens <= limit


def alert_threshold(limit: int, percent: int | None) -> int | None:
    """The tokens at which the soft alert fires (rounded up: 80 % of 999 is 800), None without one."""
    if not percent:
        return None
    return math.ceil(limit * percent / 100)
