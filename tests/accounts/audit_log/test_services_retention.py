"""The audit log's retention per plan (accounts/audit_log/services.py ``audit_events_prune``, scheduled daily as
``rb:audit-retention``): rows older than the organization's plan keeps them go, in batches; newer rows, and
every row of a plan that keeps them all, stay (docs/identity.md#the-audit-log)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from accounts.audit_log.services import audit_events_prune
from accounts.models import AuditEvent
from accounts.plans.catalogue import PLANS
from accounts.services import audit_record
from accounts.tasks import audit_retention_daily
from reasoningbank.schedules import schedule_specs

NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)


def aged(org, days: float, verb: str = "token.create") -> AuditEvent:
    event = audit_record(organization=org, actor=None, verb=verb)
    AuditEvent.objects.filter(pk=event.pk).update(created_at=NOW - timedelta(days=days))
    return event


def kept(org) -> list[float]:
    rows = AuditEvent.objects.filter(organization=org, created_at__lte=NOW - timedelta(days=1))
    return sorted(round((NOW - event.created_at).total_seconds() / 86400, 1) for event in rows)


@pytest.fixture
def orgs(cast):
    AuditEvent.objects.all().delete()
    cast.org_a.plan = "free"
    cast.org_a.save(update_fields=["plan"])
    return cast


def test_rows_older_than_the_plan_keeps_them_go_and_newer_ones_stay(orgs):
    assert PLANS["free"].limits["audit_retention_days"] == 30 and PLANS["pro"].limits["audit_retention_days"] == 90
    for days in (2, 29.9, 30.1, 45, 400):
        aged(orgs.org_a, days)  # free: 30 days
        aged(orgs.org_b, days)  # pro: 90 days
    deleted = audit_events_prune(now=NOW)
    assert kept(orgs.org_a) == [2, 29.9] and kept(orgs.org_b) == [2, 29.9, 30.1, 45]
    assert deleted["free"] == 3 and deleted["pro"] == 1


def test_a_large_backlog_goes_in_batches_until_none_is_left(orgs):
    for _ in range(7):
        aged(orgs.org_a, 100)
    aged(orgs.org_a, 3)
    assert audit_events_prune(now=NOW, batch=2)["free"] == 7
    assert kept(orgs.org_a) == [3]


def test_a_plan_that_keeps_every_row_loses_none(orgs):
    assert PLANS["enterprise"].limits["audit_retention_days"] is None
    orgs.org_b.plan = "enterprise"
    orgs.org_b.save(update_fields=["plan"])
    aged(orgs.org_b, 3650)
    assert "enterprise" not in audit_events_prune(now=NOW)
    assert kept(orgs.org_b) == [3650]


def test_the_daily_schedule_runs_the_prune(orgs):
    (spec,) = [spec for spec in schedule_specs() if spec.name == "rb:audit-retention"]
    assert spec.func == "accounts.tasks.audit_retention_daily" and spec.minutes == 24 * 60
    aged(orgs.org_a, 365 * 3)
    assert audit_retention_daily()["free"] == 1 and kept(orgs.org_a) == []
