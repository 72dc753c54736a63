"""Write limits and write suspension, at the service (accounts/write_limits/services.py,
docs/security/memory-poisoning.md#write-limits): counted per writer and per organization in the shared
counter table, refusals take nothing, a burst of flagged writes suspends a token or a connected app
with an audit row and a signal, and an admin lifts it."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from accounts.access import Principal
from accounts.events import write_suspended
from accounts.models import AuditEvent, Membership
from accounts.plans.catalogue import PLAN_ORDER, PLANS
from accounts.write_limits import services as limits
from accounts.write_limits.services import (
    flagged_write_note,
    token_write_unsuspend,
    write_admit,
    write_limits,
)
from reasoningbank.errors import Conflict, Forbidden, RateLimited

pytestmark = pytest.mark.django_db


def counts(prefix: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, count FROM rb_throttle WHERE key LIKE %s", [prefix + "%"])
        return dict(cursor.fetchall())


def writes(principal: Principal, n: int) -> list[str]:
    """``n`` writes at the door: "ok", or the refusal's code."""
    answers = []
    for _ in range(n):
        try:
            write_admit(principal)
        except (RateLimited, Forbidden) as exc:
            answers.append(exc.code)
        else:
            answers.append("ok")
    return answers


@pytest.fixture
def suspensions() -> Any:
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, organization_id: int, data: dict[str, Any], **kwargs: Any) -> None:
        sent.append({"organization_id": organization_id, **data})

    write_suspended.connect(receiver, dispatch_uid="test-write-suspended")
    yield sent
    write_suspended.disconnect(dispatch_uid="test-write-suspended")


# --- the limits -----------------------------------------------------------------------------------


def test_every_plan_bounds_each_token_below_its_organization_and_paid_plans_write_more():
    for name in PLAN_ORDER:
        plan = PLANS[name].limits
        for period in ("minute", "day"):
            each, org = plan[f"token_writes_per_{period}"], plan[f"org_writes_per_{period}"]
            assert each is not None  # a leaked token is bounded on every plan
            assert org is None or each < org
    for period in ("minute", "day"):
        values = [PLANS[name].limits[f"token_writes_per_{period}"] for name in PLAN_ORDER]
        assert values == sorted(values) and len(set(values)) == len(values)


def test_a_setting_replaces_the_plans_limit_for_every_organization_and_zero_lifts_it(cast, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 7
    settings.WRITE_LIMIT_ORG_PER_DAY = 0
    by_name = {limit.name: limit for limit in write_limits(cast.org_a)}
    assert by_name["token_writes_per_minute"].value == 7 and by_name["token_writes_per_minute"].from_setting
    assert by_name["org_writes_per_day"].value is None and by_name["org_writes_per_day"].from_setting
    assert by_name["token_writes_per_day"].value == PLANS["pro"].limits["token_writes_per_day"]
    assert not by_name["token_writes_per_day"].from_setting


@pytest.mark.usefixtures("minute_room")
def test_a_token_over_its_minute_limit_is_refused_with_the_limit_the_plan_and_when_to_retry(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = None  # the pro plan's
    plan_limit = PLANS["pro"].limits["token_writes_per_minute"]
    assert writes(agent, plan_limit) == ["ok"] * plan_limit
    with pytest.raises(RateLimited) as refused:
        write_admit(agent)
    error = refused.value
    assert error.status == 429 and error.code == "write_limited"
    assert 1 <= error.retry_after <= 60
    assert f"token {agent.token.prefix}… has made {plan_limit} writes this minute" in error.message
    assert "pro plan (token_writes_per_minute)" in error.message
    assert f"retry in {error.retry_after} seconds" in error.message
    assert "Nothing was written" in error.message and "/settings/plan/" in error.message


@pytest.mark.usefixtures("minute_room")
def test_refused_writes_take_nothing_from_the_token_or_the_organization(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 3
    assert writes(agent, 10) == ["ok"] * 3 + ["write_limited"] * 7
    token = counts(f"write:token:{agent.token.pk}:")
    org = counts(f"write:org:{cast.org_a.pk}:")
    assert token == {f"write:token:{agent.token.pk}:minute": 3, f"write:token:{agent.token.pk}:day": 3}
    assert org == {f"write:org:{cast.org_a.pk}:minute": 3, f"write:org:{cast.org_a.pk}:day": 3}


@pytest.mark.usefixtures("minute_room")
def test_a_flooding_token_leaves_the_organizations_room_to_its_other_writers(cast, make_token, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 5
    settings.WRITE_LIMIT_ORG_PER_MINUTE = 8
    _, leaked = make_token(cast.org_a, label="leaked")
    _, colleague = make_token(cast.org_a, label="colleague")
    assert writes(leaked, 50) == ["ok"] * 5 + ["write_limited"] * 45
    assert writes(colleague, 4) == ["ok"] * 3 + ["write_limited"]  # the org's 8: 5 + 3
    with pytest.raises(RateLimited) as refused:
        write_admit(colleague)
    assert "organization 'acme' has made 8 writes this minute" in refused.value.message
    assert "WRITE_LIMIT_ORG_PER_MINUTE" in refused.value.message
    # what was refused was given back: the colleague's three and the organization's eight stand
    assert counts(f"write:token:{colleague.token.pk}:minute") == {f"write:token:{colleague.token.pk}:minute": 3}
    assert counts(f"write:org:{cast.org_a.pk}:minute") == {f"write:org:{cast.org_a.pk}:minute": 8}


def test_the_day_limit_refuses_until_utc_midnight(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_DAY = 2
    assert writes(agent, 3) == ["ok", "ok", "write_limited"]
    with pytest.raises(RateLimited) as refused:
        write_admit(agent)
    now = timezone.now()
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert abs(refused.value.retry_after - (midnight - now).total_seconds()) <= 5
    assert "writes today (UTC)" in refused.value.message


@pytest.mark.usefixtures("minute_room")
def test_a_window_that_has_ended_starts_its_count_again(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 2
    assert writes(agent, 3) == ["ok", "ok", "write_limited"]
    with connection.cursor() as cursor:  # the minute is over
        cursor.execute(
            "UPDATE rb_throttle SET window_ends_at = clock_timestamp() - interval '1 second' WHERE key = %s",
            [f"write:token:{agent.token.pk}:minute"],
        )
    assert writes(agent, 3) == ["ok", "ok", "write_limited"]


@pytest.mark.usefixtures("minute_room")
def test_organizations_and_writers_are_counted_apart(cast, make_token, settings):
    settings.WRITE_LIMIT_ORG_PER_MINUTE = 2
    _, acme = make_token(cast.org_a)
    _, globex = make_token(cast.org_b)
    assert writes(acme, 3) == ["ok", "ok", "write_limited"]
    assert writes(globex, 2) == ["ok", "ok"]


@pytest.mark.usefixtures("minute_room")
def test_members_on_the_dashboard_count_toward_their_own_and_the_organizations_limits(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 2
    settings.WRITE_LIMIT_ORG_PER_MINUTE = 3
    alice = cast.principal(cast.alice)
    assert writes(alice, 3) == ["ok", "ok", "write_limited"]
    assert writes(agent, 2) == ["ok", "write_limited"]  # the org's third write
    assert counts(f"write:user:{cast.org_a.pk}:{cast.alice.pk}:minute") == {
        f"write:user:{cast.org_a.pk}:{cast.alice.pk}:minute": 2
    }


def test_the_services_own_work_is_not_charged(cast, settings):
    from accounts.access import system_principal

    settings.WRITE_LIMIT_ORG_PER_MINUTE = 1
    assert writes(system_principal(cast.org_a), 5) == ["ok"] * 5
    assert counts("write:") == {}


@pytest.mark.usefixtures("minute_room")
@pytest.mark.django_db(transaction=True)
def test_writes_at_once_from_many_connections_are_admitted_exactly_up_to_the_limit(cast, make_token, settings):
    """Eight threads, each with its own database connection (as several web processes would have), write
    at once through two tokens: exactly the organization's limit is admitted, every count is exact."""
    import threading

    from django.db import close_old_connections

    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 25
    settings.WRITE_LIMIT_ORG_PER_MINUTE = 40
    _, first = make_token(cast.org_a, label="first")
    _, second = make_token(cast.org_a, label="second")
    answers: list[str] = []
    lock, start = threading.Lock(), threading.Barrier(8)

    def writer(principal: Principal) -> None:
        try:
            start.wait()
            mine = writes(principal, 10)
            with lock:
                answers.extend(mine)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=writer, args=(first if n % 2 else second,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 80 and answers.count("ok") == 40
    minute = {key.rsplit(":", 1)[0]: n for key, n in counts("write:").items() if key.endswith(":minute")}
    assert minute[f"write:org:{cast.org_a.pk}"] == 40
    assert minute[f"write:token:{first.token.pk}"] + minute[f"write:token:{second.token.pk}"] == 40
    assert max(minute[f"write:token:{first.token.pk}"], minute[f"write:token:{second.token.pk}"]) <= 25


def test_an_admitted_write_costs_one_statement(cast, agent, django_assert_num_queries):
    with django_assert_num_queries(1):
        write_admit(agent)


# --- suspension -----------------------------------------------------------------------------------


def test_three_flagged_writes_within_the_window_suspend_the_token_audit_it_and_signal_its_organization(
    cast, agent, settings, suspensions
):
    settings.WRITE_SUSPEND_FLAGGED, settings.WRITE_SUSPEND_WINDOW = 3, 600.0
    flagged_write_note(agent)
    flagged_write_note(agent)
    assert writes(agent, 1) == ["ok"] and not suspensions
    flagged_write_note(agent)
    token = agent.token
    token.refresh_from_db()
    assert token.write_suspended_at is not None
    assert token.write_suspended_reason == "3 writes flagged by the instruction-smell detector within 10 minutes"
    audit = AuditEvent.objects.get(verb="token.write_suspend")
    assert audit.organization == cast.org_a and audit.actor == "system" and audit.target_id == str(token.pk)
    assert audit.data["kind"] == "token" and audit.data["prefix"] == token.prefix and audit.data["flagged_writes"] == 3
    (signal,) = suspensions
    assert signal["organization_id"] == cast.org_a.pk and signal["id"] == token.pk
    assert signal["unsuspend"] == f"POST /api/v1/tokens/{token.pk}/unsuspend"
    flagged_write_note(agent)  # already suspended: nothing more
    assert len(suspensions) == 1 and AuditEvent.objects.filter(verb="token.write_suspend").count() == 1


def test_a_suspended_tokens_writes_are_refused_naming_why_and_who_lifts_it(cast, agent, settings):
    settings.WRITE_SUSPEND_FLAGGED = 1
    flagged_write_note(agent)
    with pytest.raises(Forbidden) as refused:
        write_admit(agent)
    message = refused.value.message
    assert refused.value.code == "write_suspended" and refused.value.status == 403
    assert f"This token ({agent.token.prefix}…) may not write to 'acme'" in message
    assert "1 write flagged by the instruction-smell detector" in message
    assert "owner or admin" in message and "/settings/tokens/" in message
    assert f"POST /api/v1/tokens/{agent.token.pk}/unsuspend" in message
    assert counts("write:") == {}  # nothing counted either


def test_flagged_writes_spread_wider_than_the_window_do_not_suspend(cast, agent, settings):
    settings.WRITE_SUSPEND_FLAGGED, settings.WRITE_SUSPEND_WINDOW = 2, 600.0
    flagged_write_note(agent)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE rb_throttle SET window_ends_at = clock_timestamp() WHERE key LIKE 'flagged:%%'")
    flagged_write_note(agent)
    agent.token.refresh_from_db()
    assert agent.token.write_suspended_at is None


def test_a_member_on_the_dashboard_is_never_suspended(cast, settings, suspensions):
    settings.WRITE_SUSPEND_FLAGGED = 1
    alice = cast.principal(cast.alice)
    for _ in range(3):
        flagged_write_note(alice)
    assert not suspensions and writes(alice, 1) == ["ok"]


def test_an_admin_lifts_a_suspension_audited_and_the_flagged_count_starts_again(cast, agent, settings):
    settings.WRITE_SUSPEND_FLAGGED = 2
    flagged_write_note(agent)
    flagged_write_note(agent)
    token = agent.token
    token.refresh_from_db()
    token_write_unsuspend(token=token, actor=cast.principal(cast.alice))
    token.refresh_from_db()
    assert token.write_suspended_at is None and token.write_suspended_reason == ""
    audit = AuditEvent.objects.get(verb="token.write_unsuspend")
    assert audit.actor == "user:alice@acme.test" and audit.target_id == str(token.pk)
    assert "flagged" in audit.data["reason"]
    flagged_write_note(agent)  # one flagged write after the lift: not yet two
    token.refresh_from_db()
    assert token.write_suspended_at is None
    with pytest.raises(Conflict, match="is not suspended"):
        token_write_unsuspend(token=token, actor=cast.principal(cast.alice))


@pytest.mark.parametrize("role", [Membership.ROLE_VIEWER, Membership.ROLE_MEMBER])
def test_a_viewer_or_member_cannot_lift_a_suspension(cast, agent, settings, role):
    settings.WRITE_SUSPEND_FLAGGED = 1
    flagged_write_note(agent)
    Membership.objects.filter(user=cast.bob).update(role=role)
    with pytest.raises(Forbidden, match="admin role"):
        token_write_unsuspend(token=agent.token, actor=cast.principal(cast.bob))
    agent.token.refresh_from_db()
    assert agent.token.write_suspended_at is not None


def test_a_suspended_admin_token_cannot_lift_its_own_suspension(cast, make_token, settings):
    from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE

    settings.WRITE_SUSPEND_FLAGGED = 1
    _, admin = make_token(cast.org_a, scopes=[SCOPE_ADMIN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE])
    flagged_write_note(admin)
    admin.token.refresh_from_db()
    with pytest.raises(Forbidden, match="own writes are suspended"):
        token_write_unsuspend(token=admin.token, actor=admin)


def test_the_suspension_reason_fits_its_column_and_names_no_secret(cast, agent, settings):
    settings.WRITE_SUSPEND_FLAGGED, settings.WRITE_SUSPEND_WINDOW = 1, 86_400.0 * 3
    flagged_write_note(agent)
    agent.token.refresh_from_db()
    reason = agent.token.write_suspended_reason
    assert len(reason) <= 300
    assert re.fullmatch(r"1 write flagged by the instruction-smell detector within 3 days", reason)
    assert limits.WRITE_SUSPENDED == "write_suspended"
