"""Aggregate reads for the dashboard: the overview's counts and charts, a memory's audit trail.

Every function takes the acting ``Principal`` and reads only rows that principal may see (the same
``memories_readable`` / ``session_list`` / ``disputed_list`` paths as the pages themselves).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, IntegerField, Q, QuerySet
from django.db.models.functions import Cast, Floor, Least, TruncWeek
from django.urls import reverse
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import ApiToken, AuditEvent, Membership, OAuthConnection, Project, Team
from accounts.selectors import audit_changes_only
from memories.core.selectors import memories_readable
from memories.models import AgentSession, Memory
from memories.moderation.selectors import disputed_list
from memories.sessions.selectors import session_list

CONFIDENCE_BUCKETS = 10
WEEKS = 12


@dataclass(frozen=True)
class Bucket:
    label: str
    count: int
    title: str = ""


def memory_counts(principal: Principal) -> dict[str, list[Bucket]]:
    """Counts of readable memories by tier, kind, outcome and state (every choice listed, zeros too).
    Promotion proposals awaiting review show in their own state bucket only: they are no memories yet."""
    readable = memories_readable(principal)
    result: dict[str, list[Bucket]] = {}
    for field_name, choices in (
        ("state", Memory.STATE_CHOICES),
        ("tier", Memory.TIER_CHOICES),
        ("kind", Memory.KIND_CHOICES),
        ("outcome", Memory.OUTCOME_CHOICES),
    ):
        counted = readable if field_name == "state" else readable.filter(state__in=Memory.SETTLED_STATES)
        rows = dict(counted.values_list(field_name).annotate(n=Count("id")).order_by())
        result[field_name] = [Bucket(label, rows.get(value, 0), value) for value, label in choices]
    return result


def memory_total(principal: Principal) -> int:
    """Readable memories, active or archived (not the promotion proposals awaiting review)."""
    return memories_readable(principal).filter(state__in=Memory.SETTLED_STATES).count()


def confidence_histogram(principal: Principal) -> list[Bucket]:
    """Active memories in 10 confidence buckets [0, .1), [.1, .2) … [.9, 1.0] (1.0 joins the last)."""
    bucket = Least(Cast(Floor(F("confidence") * CONFIDENCE_BUCKETS), IntegerField()), CONFIDENCE_BUCKETS - 1)
    rows = dict(
        memories_readable(principal)
        .filter(state=Memory.STATE_ACTIVE)
        .annotate(bucket=bucket)
        .values_list("bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    step = 1 / CONFIDENCE_BUCKETS
    return [
        Bucket(f"{i * step:.1f}", rows.get(i, 0), f"{i * step:.1f}–{(i + 1) * step:.1f}")
        for i in range(CONFIDENCE_BUCKETS)
    ]


def memories_per_week(principal: Principal, *, weeks: int = WEEKS, now: datetime | None = None) -> list[Bucket]:
    """Memories created per ISO week (Monday start) for the last ``weeks`` weeks, oldest first."""
    now = timezone.localtime(now or timezone.now())
    this_monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    first = this_monday - timedelta(weeks=weeks - 1)
    rows = (
        memories_readable(principal)
        .filter(created_at__gte=first, state__in=Memory.SETTLED_STATES)
        .annotate(week=TruncWeek("created_at"))
        .values_list("week")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {timezone.localtime(week).date(): n for week, n in rows}
    buckets = []
    for i in range(weeks):
        monday = (first + timedelta(weeks=i)).date()
        buckets.append(Bucket(monday.strftime("%d %b"), counts.get(monday, 0), f"week of {monday.isoformat()}"))
    return buckets


def session_status_counts(principal: Principal) -> list[Bucket]:
    rows = dict(session_list(principal).values_list("status").annotate(n=Count("id")).order_by())
    return [Bucket(label, rows.get(value, 0), value) for value, label in AgentSession.STATUS_CHOICES]


def open_disputes_count(principal: Principal) -> int:
    return disputed_list(principal).count()


def recent_activity(principal: Principal, *, limit: int = 20) -> QuerySet[AuditEvent]:
    # changes only: sign-ins are the admins' to read (Settings → Audit log), and every member sees this list
    events = audit_changes_only(access_filter(AuditEvent, principal)).select_related("actor_user", "actor_token")
    return events.order_by("-created_at", "-id")[:limit]


def memory_audit_trail(principal: Principal, memory: Memory, *, limit: int = 100) -> list[AuditEvent]:
    """Audit events about this memory: those that target it, plus the ones that name it as the
    other side (a resolved contradiction, a decided review), as a source restored by an un-merge or
    as a source of a promotion."""
    about = Q(target_type="memory", target_id=memory.id)
    about |= Q(verb__in=("contradiction.resolve", "review.decide"), data__other=memory.id)
    about |= Q(verb="memory.unmerge", data__restored__contains=[memory.id])
    # a new memory promoted from a pattern (the promotion ladder) names the memories it was seen in
    about |= Q(verb="memory.promote", data__sources__contains=[memory.id])
    events = access_filter(AuditEvent, principal).select_related("actor_user", "actor_token").filter(about)
    return list(events.order_by("-created_at", "-id")[:limit])


def overview(principal: Principal) -> dict[str, Any]:
    """Everything the overview page shows, in one call."""
    total = memory_total(principal)
    return {
        "total": total,
        "counts": memory_counts(principal) if total else {},
        "histogram": confidence_histogram(principal) if total else [],
        "weekly": memories_per_week(principal) if total else [],
        "sessions": session_status_counts(principal),
        "open_disputes": open_disputes_count(principal),
        "activity": activity_rows(principal, list(recent_activity(principal))),
    }


# --- activity: what an audit event was about, named ------------------------------------------------------


@dataclass(frozen=True)
class ActivityRow:
    """An audit event as the activity tables show it: who acted and what it was about, by name."""

    event: AuditEvent
    who: str
    target: str  # the target's name or title; "" when the event has none
    target_url: str  # its page; "" when it has none or is out of the viewer's reach


# target types whose name is one field of the row, with the settings page that lists them
_NAMED_TARGETS: dict[str, tuple[type[Any], str, str]] = {
    "project": (Project, "name", "/settings/projects/"),
    "team": (Team, "name", "/settings/teams/"),
    "apitoken": (ApiToken, "label", "/settings/tokens/"),
    "oauthconnection": (OAuthConnection, "application__name", "/settings/connected-apps/"),
    "membership": (Membership, "user__email", "/settings/"),
}


def activity_rows(principal: Principal, events: list[AuditEvent]) -> list[ActivityRow]:
    """``events`` with their actors and targets named and linked. Every name is read through the
    viewer's reach (their org; for memories and sessions, what they may read), so an id that points
    elsewhere shows as its kind alone; a handful of queries per call, one per kind of target."""
    ids: dict[str, set[str]] = {}
    for event in events:
        if event.target_type and event.target_id:
            ids.setdefault(event.target_type, set()).add(event.target_id)
    names: dict[tuple[str, str], tuple[str, str]] = {}
    memories = memories_readable(principal).filter(id__in=ids.get("memory", ()))
    for memory_id, title in memories.values_list("id", "title"):
        names["memory", memory_id] = (title, reverse("memory-detail", args=[memory_id]))
    session_pks = [pk for pk in ids.get("agentsession", ()) if pk.isdigit()]
    for pk, external_id in session_list(principal).filter(pk__in=session_pks).values_list("pk", "external_id"):
        names["agentsession", str(pk)] = (f"session {external_id}", reverse("session-detail", args=[external_id]))
    for target_type, (model, field_name, url) in _NAMED_TARGETS.items():
        pks = [pk for pk in ids.get(target_type, ()) if pk.isdigit()]
        for pk, name in access_filter(model, principal).filter(pk__in=pks).values_list("pk", field_name):
            names[target_type, str(pk)] = (name or target_type, url)
    organization = principal.organization
    if str(organization.pk) in ids.get("organization", ()):
        names["organization", str(organization.pk)] = (organization.name, "/settings/plan/")
    return [ActivityRow(event, _actor_name(event), *_target_name(event, names)) for event in events]


def _actor_name(event: AuditEvent) -> str:
    if event.actor_user is not None:
        return event.actor_user.email
    if event.actor_token is not None:
        return f"token “{event.actor_token.label}”"
    return event.actor.removeprefix("user:")


def _target_name(event: AuditEvent, names: dict[tuple[str, str], tuple[str, str]]) -> tuple[str, str]:
    if not event.target_type:
        return "", ""
    if (event.target_type, event.target_id) in names:
        return names[event.target_type, event.target_id]
    if event.target_type == "consolidationrun":
        # the run's page checks the viewer's org itself; the event (of this org) names its project
        project = event.data.get("project")
        label = f"consolidation run of {project}" if project else "a consolidation run"
        return label, reverse("consolidation-run", args=[event.target_id])
    # out of the viewer's reach (a memory of a team they are not in) or gone: its kind, never a raw id
    # nor a title the event kept
    return TARGET_KINDS.get(event.target_type, event.target_type), ""


TARGET_KINDS = {
    "memory": "a memory",
    "agentsession": "a session",
    "project": "a project",
    "team": "a team",
    "apitoken": "an API token",
    "oauthconnection": "a connected app",
    "membership": "a member",
    "organization": "the organization",
    "memorylink": "a link between memories",
    "reviewitem": "a review",
}
