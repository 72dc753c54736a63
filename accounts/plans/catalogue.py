"""Plans as data: which features each plan unlocks and its limits (None = unlimited).

Services ask ``org.has_feature(...)`` / ``org.limit(...)``; nothing else hard-codes plan names.
Manual consolidation is allowed on Pro, automatic (scheduled) consolidation needs Teams, because
automatic runs spend LLM tokens nobody asked for at the moment (docs/tenancy.md#plans-and-the-default-plan).
Institutional promotion (a lesson that holds across projects proposed for team or org scope,
docs/consolidation.md#institutional-promotion) needs Teams too: it only means something where several
projects and teams share one org.
Write limits (``token_writes_*`` for each token, connected app or member, ``org_writes_*`` for the
organization as a whole) bound what one leaked token can write (docs/security/memory-poisoning.md#write-limits);
the per-writer limits stay finite on every plan, below the organization's, so one writer alone never
uses up the organization's room.
``audit_retention_days`` is how long the audit log keeps a row (the daily ``rb:audit-retention`` schedule
deletes older ones, docs/identity.md#the-audit-log).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from reasoningbank.errors import PlanRequired

PLAN_FREE = "free"
PLAN_PRO = "pro"
PLAN_TEAMS = "teams"
PLAN_ENTERPRISE = "enterprise"
PLAN_ORDER = (PLAN_FREE, PLAN_PRO, PLAN_TEAMS, PLAN_ENTERPRISE)

FEATURE_CONSOLIDATION_MANUAL = "consolidation.manual"
FEATURE_CONSOLIDATION_SCHEDULED = "consolidation.scheduled"
FEATURE_TEAMS = "teams"
FEATURE_INSTITUTIONAL_PROMOTION = "promotion.institutional"


@dataclass(frozen=True)
class Plan:
    name: str
    label: str
    features: frozenset[str]
    limits: dict[str, int | None] = field(default_factory=dict)


PLANS: dict[str, Plan] = {
    PLAN_FREE: Plan(
        PLAN_FREE,
        "Free",
        frozenset(),
        {
            "projects": 3,
            "memories": 2_000,
            "members": 3,
            "llm_tokens_per_month": 200_000,
            "token_writes_per_minute": 30,
            "token_writes_per_day": 1_000,
            "org_writes_per_minute": 60,
            "org_writes_per_day": 2_000,
            "audit_retention_days": 30,
        },
    ),
    PLAN_PRO: Plan(
        PLAN_PRO,
        "Pro",
        frozenset({FEATURE_CONSOLIDATION_MANUAL}),
        {
            "projects": 25,
            "memories": 100_000,
            "members": 10,
            "llm_tokens_per_month": 5_000_000,
            "token_writes_per_minute": 60,
            "token_writes_per_day": 5_000,
            "org_writes_per_minute": 300,
            "org_writes_per_day": 25_000,
            "audit_retention_days": 90,
        },
    ),
    PLAN_TEAMS: Plan(
        PLAN_TEAMS,
        "Teams",
        frozenset(
            {
                FEATURE_CONSOLIDATION_MANUAL,
                FEATURE_CONSOLIDATION_SCHEDULED,
                FEATURE_TEAMS,
                FEATURE_INSTITUTIONAL_PROMOTION,
            }
        ),
        {
            "projects": 250,
            "memories": 1_000_000,
            "members": 250,
            "llm_tokens_per_month": 50_000_000,
            "token_writes_per_minute": 120,
            "token_writes_per_day": 20_000,
            "org_writes_per_minute": 1_200,
            "org_writes_per_day": 250_000,
            "audit_retention_days": 365,
        },
    ),
    PLAN_ENTERPRISE: Plan(
        PLAN_ENTERPRISE,
        "Enterprise",
        frozenset(
            {
                FEATURE_CONSOLIDATION_MANUAL,
                FEATURE_CONSOLIDATION_SCHEDULED,
                FEATURE_TEAMS,
                FEATURE_INSTITUTIONAL_PROMOTION,
            }
        ),
        {
            "projects": None,
            "memories": None,
            "members": None,
            "llm_tokens_per_month": None,
            # a leaked token is bounded on every plan; only the organization as a whole is not
            "token_writes_per_minute": 300,
            "token_writes_per_day": 100_000,
            "org_writes_per_minute": None,
            "org_writes_per_day": None,
            # kept as long as the organization is (an enterprise streams its log to its own SIEM, or keeps it here)
            "audit_retention_days": None,
        },
    ),
}

PLAN_CHOICES = [(plan.name, plan.label) for plan in PLANS.values()]


def plan_get(name: str) -> Plan:
    try:
        return PLANS[name]
    except KeyError:
        raise ValueError(f"unknown plan {name!r}; choose one of {', '.join(PLAN_ORDER)}") from None


def minimum_plan_for(feature: str) -> str | None:
    """The cheapest plan that has ``feature`` (for upgrade messages)."""
    for name in PLAN_ORDER:
        if feature in PLANS[name].features:
            return name
    return None


def plan_change_hint(organization_slug: str, plan: str | None) -> str:
    """Where a plan is changed, for every ``plan_required`` message (REST, MCP, dashboard): an agent
    that meets the error tells its user, who needs the page (or, self-hosting, the command and the
    setting) rather than the bare fact that a plan is missing (docs/tenancy.md#plans-and-the-default-plan)."""
    wanted = plan or PLAN_ORDER[-1]
    return (
        f"An owner of {organization_slug!r} changes the plan on the dashboard at "
        f"{settings.SITE_URL.rstrip('/')}/settings/plan/; self-hosting, run "
        f"`manage.py set_plan {organization_slug} {wanted}`, and set DEFAULT_PLAN for the plan new "
        "organizations start on."
    )


def plan_required(
    organization: Any, feature: str, what: str, *, field: str | None = None, instead: str = ""
) -> PlanRequired:
    """The ``PlanRequired`` error for ``what`` (which needs ``feature``) in ``organization``: the plan
    that has it, the plan the org is on, what to do ``instead`` if anything, and where to change it."""
    needed = minimum_plan_for(feature)
    alternative = f": {instead}, or change the plan" if instead else ""
    return PlanRequired(
        f"{what} needs the {needed} plan or above; this organization is on {organization.plan}{alternative}. "
        + plan_change_hint(organization.slug, needed),
        field=field,
    )


# How much of a limit an org uses, counted by the app that owns the data: the memories app registers
# "memories" when it loads (accounts never imports memories, docs/architecture.md#the-never-arrows).
# Each counter takes the org.
UsageCounter = Callable[[Any], int]
_USAGE_COUNTERS: dict[str, UsageCounter] = {}


def usage_counter_register(limit: str, counter: UsageCounter) -> None:
    _USAGE_COUNTERS[limit] = counter


def usage_count(limit: str, organization: Any) -> int:
    """What ``organization`` uses of ``limit``; 0 when no app counts it."""
    counter = _USAGE_COUNTERS.get(limit)
    return counter(organization) if counter is not None else 0
