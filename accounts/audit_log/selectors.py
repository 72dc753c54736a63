"""Reads of the audit log: the filtered rows of one organization (the dashboard page, the export,
``GET /api/v1/audit``) and one row as the plain dict every reader gets (the API, the export, the
``audit.event`` webhook). Organization admins and owners only, with a principal for the whole
organization: the log names every member, token and address (docs/identity.md#the-audit-log)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import is_naive, make_aware

from accounts.access import Principal, access_filter
from accounts.audit_log.verbs import ACCESS_CATEGORIES, ACCESS_VERBS, CATEGORY_PATTERN, VERB_PATTERN
from accounts.models import SCOPE_ADMIN, AuditEvent
from reasoningbank.errors import Forbidden, InvalidInput, Rejected

FILTER_TEXT_MAX = 200  # the longest actor label; every other filter is shorter
VERB_MAX = 64  # AuditEvent.verb
TARGET_MAX = 64  # AuditEvent.target_type and target_id


@dataclass(frozen=True)
class AuditFilter:
    """Which rows: each field narrows the log, None leaves it open. ``verb`` is exact, ``category`` the
    verbs before the first dot (``auth`` → ``auth.*``), ``actor`` a part of the actor's label (an email, a
    token's prefix) in any case, ``target_type``/``target_id`` exact, ``since`` inclusive, ``until``
    exclusive."""

    verb: str | None = None
    category: str | None = None
    actor: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def as_query(self) -> dict[str, str]:
        """The filters that are set, as query parameters (the export's audit row, the page's links)."""
        return {
            name: value.isoformat() if isinstance(value, datetime) else str(value)
            for name, value in asdict(self).items()
            if value is not None
        }


FILTER_NAMES = tuple(AuditFilter.__dataclass_fields__)


def _moment(name: str, raw: str) -> datetime:
    """A moment, or a day (the page's date fields): ``since`` a day is its start, ``until`` a day its end,
    so a range of days takes both whole."""
    value: datetime | None = None
    day = None
    try:
        # a bare day first: Python reads "2026-12-02" as that day's midnight, which for ``until`` is a day early
        day = parse_date(raw) if len(raw) == len("YYYY-MM-DD") else None
        value = parse_datetime(raw) if day is None else None
    except ValueError:
        pass
    if day is not None:
        value = datetime.combine(day + timedelta(days=1) if name == "until" else day, time.min, tzinfo=UTC)
    if value is None:
        raise InvalidInput(
            f"{name} must be a date and time in ISO 8601 (2026-12-02T09:30:00Z), not {raw[:40]!r}", field=name
        )
    return make_aware(value) if is_naive(value) else value


def audit_filter_check(filters: AuditFilter) -> AuditFilter:
    """The same rules for every transport: a malformed verb, category or target is a 400 naming it; a
    range that ends before it starts is a 422 (each bound alone is valid)."""
    checks = (
        ("verb", filters.verb, VERB_MAX, VERB_PATTERN, "a verb like auth.sign_in"),
        ("category", filters.category, VERB_MAX, CATEGORY_PATTERN, "a category like auth (lower case, no dot)"),
        ("actor", filters.actor, FILTER_TEXT_MAX, None, ""),
        ("target_type", filters.target_type, TARGET_MAX, None, ""),
        ("target_id", filters.target_id, TARGET_MAX, None, ""),
    )
    for name, value, maximum, pattern, shape in checks:
        if value is None:
            continue
        if not value.strip() or "\x00" in value:
            raise InvalidInput(f"{name} must not be empty: give a value or leave it out", field=name)
        if len(value) > maximum:
            raise InvalidInput(f"{name} takes at most {maximum} characters", field=name)
        if pattern is not None and not pattern.fullmatch(value):
            raise InvalidInput(f"{name} must be {shape}, not {value[:40]!r}", field=name)
    if filters.since is not None and filters.until is not None and filters.until <= filters.since:
        raise Rejected("until must be later than since", field="until", code="rejected_range")
    return filters


def audit_filter_parse(values: Mapping[str, str]) -> AuditFilter:
    """The filters of a query string (the dashboard page and its export): blank values are no filter,
    anything else is checked as ``audit_filter_check`` does."""
    given = {name: (values.get(name) or "").strip() or None for name in FILTER_NAMES}
    since, until = given["since"], given["until"]
    return audit_filter_check(
        AuditFilter(
            verb=given["verb"],
            category=given["category"],
            actor=given["actor"],
            target_type=given["target_type"],
            target_id=given["target_id"],
            since=_moment("since", since) if since else None,
            until=_moment("until", until) if until else None,
        )
    )


def audit_admin_require(principal: Principal) -> None:
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"the audit log needs the '{SCOPE_ADMIN}' scope (organization admins and owners)")
    if principal.is_restricted:
        raise Forbidden(
            "a token restricted to some projects cannot read the audit log: it covers the whole organization"
        )


def audit_events_list(principal: Principal, filters: AuditFilter) -> QuerySet[AuditEvent]:
    """The organization's rows that pass ``filters``, newest first."""
    audit_admin_require(principal)
    rows = access_filter(AuditEvent, principal)
    if filters.verb is not None:
        rows = rows.filter(verb=filters.verb)
    if filters.category is not None:
        rows = rows.filter(verb__startswith=f"{filters.category}.")
    if filters.actor is not None:
        rows = rows.filter(actor__icontains=filters.actor)
    if filters.target_type is not None:
        rows = rows.filter(target_type=filters.target_type)
    if filters.target_id is not None:
        rows = rows.filter(target_id=filters.target_id)
    if filters.since is not None:
        rows = rows.filter(created_at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(created_at__lt=filters.until)
    return rows.order_by("-created_at", "-id")


def audit_event_describe(event: AuditEvent) -> dict[str, Any]:
    """One row as every reader gets it: the API, the export and the ``audit.event`` webhook."""
    return {
        "id": event.pk,
        "created_at": event.created_at.isoformat(),
        "verb": event.verb,
        "actor": event.actor,
        "actor_user_id": event.actor_user_id,
        "actor_token_id": event.actor_token_id,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "ip": event.ip,
        "client": event.client,
        "data": event.data,
    }


def audit_events_describe(organization_id: int, event_ids: list[int]) -> list[dict[str, Any]]:
    """The rows ``event_ids`` of one organization, described, in id order (the ``audit.event`` webhook: the
    organization is the rows' own, from the signal, never a caller's choice)."""
    rows = AuditEvent.objects.filter(organization_id=organization_id, pk__in=event_ids).order_by("pk")
    return [audit_event_describe(row) for row in rows]


def audit_changes_only(events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """``events`` without the access rows (sign-ins, sign-outs, exports of the log): what a page every member
    sees lists (the overview's recent activity); the sign-ins stay in the admins' audit log."""
    access = Q(verb__in=ACCESS_VERBS)
    for category in ACCESS_CATEGORIES:
        access |= Q(verb__startswith=f"{category}.")
    return events.exclude(access)
