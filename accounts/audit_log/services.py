"""Writes of the audit log's own features: the sign-in rows (from the sign-in signals, accounts/receivers.py),
the row an export leaves, and the retention per plan (docs/identity.md#the-audit-log)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from accounts.access import Principal, principal_for_membership
from accounts.audit import audit_record
from accounts.audit_log.selectors import AuditFilter, audit_admin_require
from accounts.audit_log.verbs import VERB_EXPORT, VERB_SIGN_IN, VERB_SIGN_IN_FAILED, VERB_SIGN_OUT
from accounts.models import AuditEvent, Membership
from accounts.plans.catalogue import PLANS

logger = logging.getLogger(__name__)

RETENTION_LIMIT = "audit_retention_days"  # the plan's limit (accounts/plans/catalogue.py); None keeps every row
PRUNE_BATCH = 5_000  # rows per DELETE: short statements, so the appends of the service never wait long
LOGIN_KEPT = 200  # characters of a failed sign-in's login (AuditEvent.actor's length)
ANONYMOUS = "anonymous"


def _memberships(user: Any) -> list[Membership]:
    # the rows go to every organization the person belongs to: each one's admins see their member's sign-ins
    return list(Membership.objects.filter(user=user).select_related("organization", "user").order_by("id"))


def auth_sign_in_record(*, user: Any, method: str, data: dict[str, Any] | None = None) -> int:
    """A member signed in (``method``: password, sso, …): one ``auth.sign_in`` row in each of their
    organizations, by them, on their user. Returns how many rows."""
    memberships = _memberships(user)
    for membership in memberships:
        audit_record(
            organization=membership.organization,
            actor=principal_for_membership(membership),
            verb=VERB_SIGN_IN,
            target=user,
            data={"method": method, **(data or {})},
        )
    return len(memberships)


def auth_sign_in_failed_record(*, login: str, method: str = "password") -> int:
    """A sign-in failed with ``login`` (an email or user name). When it names a member, one
    ``auth.sign_in_failed`` row in each of their organizations, by ``anonymous`` (whoever typed it is not
    known), on the member, with the login as typed; a login that names nobody belongs to no organization and
    is left to the service's log. Never the password: it is not passed here."""
    login = " ".join(login.split())[:LOGIN_KEPT]
    if not login:
        return 0
    users = get_user_model().objects.filter(Q(email__iexact=login) | Q(username__iexact=login))[:2]
    if len(users) != 1:
        logger.info("sign-in failed for a login that names no single user")
        return 0
    user = users[0]
    memberships = _memberships(user)
    for membership in memberships:
        audit_record(
            organization=membership.organization,
            actor=None,
            actor_label=ANONYMOUS,
            verb=VERB_SIGN_IN_FAILED,
            target=user,
            data={"method": method, "login": login},
        )
    return len(memberships)


def auth_sign_out_record(*, user: Any) -> int:
    """A member signed out: one ``auth.sign_out`` row in each of their organizations."""
    memberships = _memberships(user)
    for membership in memberships:
        audit_record(
            organization=membership.organization,
            actor=principal_for_membership(membership),
            verb=VERB_SIGN_OUT,
            target=user,
        )
    return len(memberships)


def audit_export_record(*, principal: Principal, file_format: str, filters: AuditFilter, truncated: bool) -> AuditEvent:
    """The export itself is in the log: who took which rows (the filters), in which format, and whether
    the export was cut at ``AUDIT_EXPORT_MAX_ROWS``."""
    audit_admin_require(principal)
    return audit_record(
        organization=principal.organization,
        actor=principal,
        verb=VERB_EXPORT,
        data={"format": file_format, "filters": filters.as_query(), "truncated": truncated},
    )


def audit_retention_cutoffs(now: datetime) -> dict[str, datetime]:
    """Per plan with a finite retention, the moment before which its organizations' rows go."""
    return {
        name: now - timedelta(days=int(days))
        for name, plan in PLANS.items()
        if (days := plan.limits.get(RETENTION_LIMIT)) is not None
    }


def audit_events_prune(*, now: datetime | None = None, batch: int = PRUNE_BATCH) -> dict[str, int]:
    """Delete the rows older than each organization's plan keeps them, ``batch`` rows per statement.
    Returns how many rows went, per plan. A plan change takes effect at the next run: a downgrade removes
    what the new plan no longer keeps, an upgrade keeps what is still there."""
    deleted: dict[str, int] = {}
    for plan, cutoff in audit_retention_cutoffs(now or timezone.now()).items():
        old = AuditEvent.objects.filter(organization__plan=plan, created_at__lt=cutoff)
        total = 0
        while True:
            ids = list(old.values_list("pk", flat=True)[:batch])
            if not ids:
                break
            total += AuditEvent.objects.filter(pk__in=ids).delete()[0]
        deleted[plan] = total
    return deleted
