"""Settings → Trust (memories/trust/views_policy.py, templates/memories/trust/_settings_policy.html;
docs/security/memory-poisoning.md#the-trust-policy): one form with the three settings for admins and
owners, each choice explained, the trusted hosts one a line; errors shown beside their field with what was
typed kept; a success message. Members and viewers read the policy and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import AuditEvent, Membership, Organization
from tests.factories import MembershipFactory, UserFactory

SETTINGS = "/settings/trust/"
POLICY_FORM = '<form method="post" action="/settings/trust/"'
FORM = {"poisoning_policy": "quarantine", "injection_policy": "trusted", "trusted_hosts": ""}


def logged_in(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


def policy_of(org: Organization) -> tuple[str, str, list[str]]:
    org.refresh_from_db()
    return org.poisoning_policy, org.injection_policy, org.trusted_hosts


def test_an_owner_sees_one_form_with_every_choice_explained_and_the_current_ones_checked(client, cast):
    Organization.objects.filter(pk=cast.org_a.pk).update(trusted_hosts=["tools.acme.test", ".acme.dev"])

    page = logged_in(client, cast.alice).get(SETTINGS).content.decode()

    assert page.count(POLICY_FORM) == 1
    assert 'name="poisoning_policy" value="quarantine" checked' in page
    assert 'name="injection_policy" value="trusted" checked' in page
    for choice in ("poisoning_policy\" value=\"flag\"", "poisoning_policy\" value=\"off\"",
                   "injection_policy\" value=\"reviewed\"", "injection_policy\" value=\"all\""):  # fmt: skip
        assert choice in page
    assert "held back: no search, session or hook sees it until an admin approves it" in page
    assert "Nothing is checked" in page
    assert ">tools.acme.test\n.acme.dev</textarea>" in page
    assert "raw.githubusercontent.com/acme/" in page and "IP addresses, ports and wildcards" in page


def test_saving_changes_the_three_settings_audits_each_and_says_so(client, cast):
    owner = logged_in(client, cast.alice)
    form = {"poisoning_policy": "flag", "injection_policy": "reviewed",
            "trusted_hosts": "https://Tools.Acme.test/\r\n\r\n.acme.dev\r\ntools.acme.test\r\n"}  # fmt: skip

    response = owner.post(SETTINGS, form)

    assert response.status_code == 302 and response["Location"] == SETTINGS
    assert policy_of(cast.org_a) == ("flag", "reviewed", ["tools.acme.test", ".acme.dev"])
    assert {event.verb for event in AuditEvent.objects.filter(verb__startswith="organization.")} == {
        "organization.poisoning_policy", "organization.injection_policy", "organization.trusted_hosts"
    }  # fmt: skip
    page = owner.get(SETTINGS).content.decode()
    assert "Trust policy saved." in page and 'value="flag" checked' in page and 'value="reviewed" checked' in page


def test_emptying_the_hosts_box_trusts_no_host_of_ours(client, cast):
    Organization.objects.filter(pk=cast.org_a.pk).update(trusted_hosts=["tools.acme.test"])
    logged_in(client, cast.alice).post(SETTINGS, FORM)
    assert policy_of(cast.org_a)[2] == []


def test_a_bad_host_is_shown_beside_the_hosts_with_what_was_typed_and_nothing_is_saved(client, cast):
    form = {**FORM, "poisoning_policy": "off", "trusted_hosts": "tools.acme.test\n10.0.0.5"}

    response = logged_in(client, cast.alice).post(SETTINGS, form)

    assert response.status_code == 400
    page = response.content.decode()
    inline = page.split('id="trusted-hosts-error"', 1)[1].split("</div>", 1)[0]
    assert "&#x27;10.0.0.5&#x27;" in inline and "IP address" in inline
    assert ">tools.acme.test\n10.0.0.5</textarea>" in page  # what was typed, to fix
    assert 'name="poisoning_policy" value="off" checked' in page  # the other choices as submitted
    assert policy_of(cast.org_a) == ("quarantine", "trusted", [])
    assert not AuditEvent.objects.filter(verb__startswith="organization.").exists()


def test_an_unknown_choice_is_a_400_shown_beside_its_group(client, cast):
    response = logged_in(client, cast.alice).post(SETTINGS, {**FORM, "injection_policy": "everything"})
    assert response.status_code == 400
    inline = response.content.decode().split('id="injection-policy-error"', 1)[1].split("</div>", 1)[0]
    assert "must be one of trusted, reviewed, all" in inline
    assert policy_of(cast.org_a)[1] == "trusted"


@pytest.mark.parametrize("role", [Membership.ROLE_VIEWER, Membership.ROLE_MEMBER])
def test_members_and_viewers_read_the_policy_without_a_form_and_cannot_change_it(client, cast, role):
    Organization.objects.filter(pk=cast.org_a.pk).update(poisoning_policy="flag", trusted_hosts=["tools.acme.test"])
    reader = cast.bob if role == Membership.ROLE_VIEWER else UserFactory()
    if role == Membership.ROLE_MEMBER:
        MembershipFactory(user=reader, organization=cast.org_a, role=role)

    page = logged_in(client, reader).get(SETTINGS).content.decode()

    assert "Admins and owners change these settings." in page and POLICY_FORM not in page
    assert "<strong>Flag</strong>" in page and "<strong>Trusted (recommended)</strong>" in page
    assert "<code>tools.acme.test</code>" in page
    assert client.post(SETTINGS, {**FORM, "poisoning_policy": "off"}).status_code == 403
    assert policy_of(cast.org_a) == ("flag", "trusted", ["tools.acme.test"])


@pytest.mark.cross_tenant("settings-trust")
def test_an_owner_reads_and_changes_only_their_own_orgs_policy(client, cast):
    Organization.objects.filter(pk=cast.org_a.pk).update(trusted_hosts=["tools.acme.test"])
    charlie = logged_in(client, cast.charlie)

    assert "tools.acme.test" not in charlie.get(SETTINGS).content.decode()
    charlie.post(SETTINGS, {**FORM, "injection_policy": "all", "trusted_hosts": "tools.globex.test"})

    assert policy_of(cast.org_b) == ("quarantine", "all", ["tools.globex.test"])
    assert policy_of(cast.org_a) == ("quarantine", "trusted", ["tools.acme.test"])


def test_the_operators_admin_shows_the_trust_policy_but_leaves_it_to_the_organization(client, cast):
    root = get_user_model().objects.create_superuser(username="root", email="root@rb.test", password="x-long-pass")
    client.force_login(root)
    form = {
        "slug": "acme", "name": "Acme", "plan": "pro", "created_at_0": "2026-01-01", "created_at_1": "00:00:00",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "poisoning_policy": "off", "injection_policy": "all", "trusted_hosts": "10.0.0.5",
    }  # fmt: skip

    response = client.post(reverse("admin:accounts_organization_change", args=[cast.org_a.pk]), form)

    assert response.status_code == 302
    assert policy_of(cast.org_a) == ("quarantine", "trusted", [])
