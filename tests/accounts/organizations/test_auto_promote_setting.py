"""The organization's "accept promotion proposals automatically" switch
(docs/consolidation.md#institutional-promotion): off by default, changed by org admins on the Teams
settings page or by staff in the admin, audited; viewers cannot, and a user of another organization
changes only their own."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import AuditEvent, Organization
from accounts.organizations.services import organization_set_auto_promote
from reasoningbank.errors import Forbidden, InvalidInput

SWITCH = "/settings/teams/promotion/"


@pytest.fixture
def teams_plan(cast):
    Organization.objects.filter(pk__in=[cast.org_a.pk, cast.org_b.pk]).update(plan="teams")
    return cast


def flag(org: Organization) -> bool:
    org.refresh_from_db()
    return org.auto_promote_institutional


def test_automatic_promotion_is_off_by_default(cast):
    assert flag(cast.org_a) is False and flag(cast.org_b) is False


def test_the_service_switches_it_audits_and_names_bad_input(cast):
    alice = cast.principal(cast.alice)
    organization_set_auto_promote(organization=cast.org_a, enabled=True, actor=alice)
    assert flag(cast.org_a) is True
    event = AuditEvent.objects.get(verb="organization.auto_promote")
    assert event.data == {"enabled": True} and event.actor == "user:alice@acme.test"
    organization_set_auto_promote(organization=cast.org_a, enabled=True, actor=alice)  # no change, no new row
    assert AuditEvent.objects.filter(verb="organization.auto_promote").count() == 1
    with pytest.raises(InvalidInput) as refused:
        organization_set_auto_promote(organization=cast.org_a, enabled="yes", actor=alice)
    assert refused.value.field == "auto_promote_institutional"
    with pytest.raises(Forbidden):
        organization_set_auto_promote(organization=cast.org_a, enabled=False, actor=cast.principal(cast.bob))
    assert flag(cast.org_a) is True


def test_an_admin_switches_it_on_the_teams_page(client, teams_plan):
    client.force_login(teams_plan.alice)
    page = client.get("/settings/teams/").content.decode()
    assert "Accept promotion proposals automatically" in page and f'action="{SWITCH}"' in page
    response = client.post(SWITCH, {"auto_promote_institutional": "on"}, follow=True)
    assert "now accepted automatically" in response.content.decode()
    assert flag(teams_plan.org_a) is True
    client.post(SWITCH, {})
    assert flag(teams_plan.org_a) is False
    assert [e.data["enabled"] for e in AuditEvent.objects.filter(verb="organization.auto_promote")] == [False, True]


def test_a_viewer_sees_the_setting_but_cannot_change_it(client, teams_plan):
    client.force_login(teams_plan.bob)
    page = client.get("/settings/teams/").content.decode()
    assert "reviewed by a moderator" in page and f'action="{SWITCH}"' not in page
    assert client.post(SWITCH, {"auto_promote_institutional": "on"}).status_code == 403
    assert flag(teams_plan.org_a) is False


def test_below_the_teams_plan_the_page_names_the_plan(client, cast):
    client.force_login(cast.alice)
    page = client.get("/settings/teams/").content.decode()
    assert "Institutional promotion needs the Teams plan" in page and f'action="{SWITCH}"' not in page


@pytest.mark.cross_tenant("settings-auto-promote")
def test_another_orgs_admin_switches_only_their_own_org(client, teams_plan):
    client.force_login(teams_plan.charlie)
    assert client.post(SWITCH, {"auto_promote_institutional": "on"}).status_code == 302
    assert (flag(teams_plan.org_a), flag(teams_plan.org_b)) == (False, True)
    assert not AuditEvent.objects.filter(organization=teams_plan.org_a, verb="organization.auto_promote").exists()


def test_staff_switch_it_in_the_admin_and_it_is_audited(client, cast):
    root = get_user_model().objects.create_superuser(username="root", email="root@rb.test", password="x-long-pass")
    client.force_login(root)
    form = {
        "slug": "acme", "name": "Acme", "plan": "teams", "auto_promote_institutional": "on",
        "created_at_0": "2026-01-01", "created_at_1": "00:00:00",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
    }  # fmt: skip
    response = client.post(reverse("admin:accounts_organization_change", args=[cast.org_a.pk]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    cast.org_a.refresh_from_db()
    assert (cast.org_a.plan, cast.org_a.auto_promote_institutional) == ("teams", True)
    event = AuditEvent.objects.get(verb="organization.auto_promote")
    assert event.data == {"enabled": True} and event.actor == "user:root@rb.test"
    assert AuditEvent.objects.get(verb="organization.plan_change").data == {"from": "pro", "to": "teams"}
