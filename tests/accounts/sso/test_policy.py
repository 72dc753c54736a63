"""Requiring single sign-on: who may set it, what it needs, and what it does to a password sign-in (the
owner's break-glass path stays open)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Membership, Organization, SsoDomain
from accounts.sso.selectors import sso_password_refusal
from accounts.sso.services import sso_oidc_configure, sso_policy_set
from reasoningbank.errors import Forbidden, InvalidInput

pytestmark = pytest.mark.django_db


def test_the_policy_needs_a_provider_and_a_verified_domain_and_an_owner(cast: Any, settings: Any) -> None:
    settings.SSO_ALLOW_HTTP = True
    alice = cast.principal(cast.alice)
    with pytest.raises(InvalidInput, match="configure the identity provider"):
        sso_policy_set(principal=alice, required=True)
    sso_oidc_configure(principal=alice, server_url="https://acme.okta.com", client_id="c", secret="s")
    unverified = SsoDomain.objects.create(organization=cast.org_a, domain="acme.test", token="t")
    with pytest.raises(InvalidInput, match="verify at least one domain"):
        sso_policy_set(principal=alice, required=True)
    unverified.verified_at = unverified.created_at
    unverified.save()
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_ADMIN)
    with pytest.raises(Forbidden, match="only an owner"):
        sso_policy_set(principal=cast.principal(cast.bob), required=True)
    sso_policy_set(principal=alice, required=True)
    assert Organization.objects.get(pk=cast.org_a.pk).sso_required
    assert AuditEvent.objects.get(verb="sso.policy_change").data == {"sso_required": True}


def test_a_password_is_refused_for_the_domain_but_not_for_its_owners_or_other_domains(cast: Any, acme_sso: Any) -> None:
    sso_policy_set(principal=cast.principal(cast.alice), required=True)
    assert sso_password_refusal(email="bob@acme.test") == cast.org_a
    assert sso_password_refusal(email="BOB@Acme.Test") == cast.org_a
    assert sso_password_refusal(email="newcomer@acme.test") == cast.org_a
    assert sso_password_refusal(email="alice@acme.test") is None  # the owner's break-glass
    assert sso_password_refusal(email="charlie@globex.test") is None


def test_the_sign_in_page_refuses_the_password_and_points_to_single_sign_on(
    cast: Any, acme_sso: Any, client: Any
) -> None:
    sso_policy_set(principal=cast.principal(cast.alice), required=True)
    refused = client.post(
        "/accounts/login/?next=/settings/", {"login": "bob@acme.test", "password": "correct-horse-battery"}
    )
    assert refused.status_code == 200
    body = refused.content.decode()
    assert "Acme requires single sign-on for this address" in body
    assert 'href="/sso/?next=/settings/"' in body
    assert "_auth_user_id" not in client.session
    # the owner's password still works
    signed_in = client.post("/accounts/login/", {"login": "alice@acme.test", "password": "correct-horse-battery"})
    assert signed_in.status_code == 302
    assert client.session["_auth_user_id"] == str(cast.alice.pk)


def test_without_the_policy_the_domains_members_keep_their_passwords(cast: Any, acme_sso: Any, client: Any) -> None:
    response = client.post("/accounts/login/", {"login": "bob@acme.test", "password": "correct-horse-battery"})
    assert response.status_code == 302
