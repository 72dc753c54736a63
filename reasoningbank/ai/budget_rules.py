"""The arithmetic of LLM budgets (docs/llm-spend.md): the periods a cap counts over (UTC days and
months), the caps in force for an organization, what a call reserves before it is made (its likely
cost) and the most it can cost (its ceiling), whether it is admitted, what it is charged, and the
alert threshold. Pure: ``reasoningbank.ai.budget`` does the database part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

DAY, MONTH = "day", "month"
PERIODS = (MONTH, DAY)  # the order rows are locked in: every worker the same, so two never deadlock

DEFAULT_ALERT_PERCENT = 80  # an organization that set no budget is warned at 80 % of its plan's

# chat formats add a few tokens per message (role markers, the reply's priming) to what the text counts
MESSAGE_OVERHEAD_TOKENS = 32

# A kind of call with no reply on record yet is expected to use this share of its max_tokens: replies
# asked for as JSON (every prompt kind here) rarely come near their bound, and a purpose's real replies
# replace the guess after its first call.
DEFAULT_REPLY_SHARE = 0.25
# how many of a purpose's latest replies its usual reply is the average of
REPLY_SAMPLES = 20

# what an admission check says of a call: it runs; it waits for calls in flight to settle; it is refused
ADMIT, WAIT, REFUSE = "admit", "wait", "refuse"


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


@dataclass(frozen=True)
class CallCost:
    """What a call reserves before it is made (``likely``: its prompt and its kind's usual reply) and the
    most it can cost (``ceiling``: its prompt counted at the strict end and a reply of its whole
    ``max_tokens``); ``likely`` never exceeds ``ceiling``."""

    likely: int
    ceiling: int


def tokens_ceiling(*, system: str, prompt: str, max_tokens: int, bytes_per_token: float) -> int:
    """The most a call can spend: the reply is bounded by ``max_tokens`` (the provider stops there); the
    prompt by its UTF-8 bytes over ``bytes_per_token`` (1 is a strict bound for the byte-level
    tokenizers both vendors use; English prose and code run at 3.5 to 4.5 bytes a token, so the default
    2 keeps a factor-two margin)."""
    text_bytes = len(system.encode("utf-8")) + len(prompt.encode("utf-8"))
    return math.ceil(text_bytes / bytes_per_token) + MESSAGE_OVERHEAD_TOKENS + max(0, int(max_tokens))


def reply_expected(recent: Sequence[int], max_tokens: int) -> int:
    """The usual reply of a kind of call: the average of its ``recent`` replies' real output tokens,
    each taken at most ``max_tokens`` (a reply cannot be longer); without any, ``DEFAULT_REPLY_SHARE``
    of ``max_tokens``."""
    bound = max(0, int(max_tokens))
    if not recent:
        return math.ceil(bound * DEFAULT_REPLY_SHARE)
    return min(bound, math.ceil(sum(min(max(0, r), bound) for r in recent) / len(recent)))


def call_cost(*, prompt_tokens: int, recent_replies: Sequence[int], max_tokens: int, ceiling: int) -> CallCost:
    """A call's likely cost (its prompt's estimated tokens, the chat format's overhead and its kind's
    usual reply) next to its ``ceiling`` (``tokens_ceiling``)."""
    likely = max(0, prompt_tokens) + MESSAGE_OVERHEAD_TOKENS + reply_expected(recent_replies, max_tokens)
    return CallCost(likely=min(likely, ceiling), ceiling=ceiling)


def admission(*, used: int, reserved: int, ceilings: int, cost: CallCost, limit: int) -> str:
    """Whether a call runs under one cap, given the period's spend (``used``), the likely costs held by
    the calls in flight (``reserved``) and their ceilings (``ceilings``):

    - ``REFUSE`` once the spend and the holds leave no room for the call's likely cost (a call that
      exactly reaches the cap runs);
    - ``ADMIT`` when even every call in flight and this one spending their ceilings stays within the
      cap, or when no call is in flight (then this one alone can pass the cap, by less than its ceiling);
    - ``WAIT`` otherwise: the calls in flight could fill the cap; once they settled, their real spend
      decides.

    So the spend never passes the cap by more than one call's ceiling, however many calls run at once
    and however much each of them spends up to its ceiling, while calls are refused only when the real
    spend and the likely costs in flight reach the cap."""
    if used + reserved + cost.likely > limit:
        return REFUSE
    if ceilings <= 0 or used + ceilings + cost.ceiling <= limit:
        return ADMIT
    return WAIT


def charge(reported: int, ceiling: int) -> int:
    """What a call's reported tokens count against the caps: all of them, up to the most the call could
    have spent (a provider reporting more is over-reporting: docs/llm-spend.md#over-reports)."""
    return min(max(0, reported), max(0, ceiling))


def alert_threshold(limit: int, percent: int | None) -> int | None:
    """The tokens at which the soft alert fires (rounded up: 80 % of 999 is 800), None without one."""
    if not percent:
        return None
    return math.ceil(limit * percent / 100)
