"""Settings → Single sign-on and the public start page: admins of the organization only, and another
organization's configuration and domains are out of sight and out of reach (404)."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.socialaccount.models import SocialApp

from accounts.models import AuditEvent, Membership, SsoConnection, SsoDomain

pytestmark = pytest.mark.django_db


@pytest.mark.cross_tenant("settings-sso")
def test_another_organizations_admin_sees_nothing_of_its_provider_or_domains(
    cast: Any, acme_sso: Any, client: Any
) -> None:
    client.force_login(cast.charlie)  # globex's owner
    page = client.get("/settings/sso/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "acme-client" not in body and "acme.test" not in body and "127.0.0.1:9" not in body
    assert "No identity provider yet." in body
    client.force_login(cast.alice)
    own = client.get("/settings/sso/").content.decode()
    assert "acme-client" in own and "acme.test" in own
    assert "acme-secret" not in own  # the secret is never shown back


def test_a_viewer_gets_a_403_and_the_section_is_not_offered(cast: Any, client: Any) -> None:
    client.force_login(cast.bob)
    assert client.get("/settings/sso/").status_code == 403
    assert client.post("/settings/sso/domains/", {"domain": "acme.test"}).status_code == 403
    assert "/settings/sso/" not in client.get("/settings/").content.decode()
    assert not SsoDomain.objects.exists()


@pytest.mark.cross_tenant("settings-sso-domain-verify", "settings-sso-domain-remove")
def test_org_b_cannot_verify_or_remove_org_as_domain(cast: Any, acme_sso: Any, client: Any) -> None:
    pending = SsoDomain.objects.create(organization=cast.org_a, domain="pending.test", token="t")
    client.force_login(cast.charlie)
    assert client.post(f"/settings/sso/domains/{pending.pk}/verify/").status_code == 404
    assert client.post(f"/settings/sso/domains/{pending.pk}/remove/").status_code == 404
    assert SsoDomain.objects.filter(organization=cast.org_a).count() == 2
    assert not AuditEvent.objects.filter(verb__startswith="sso.domain").exists()


@pytest.mark.cross_tenant(
    "settings-sso-oidc", "settings-sso-saml", "settings-sso-roles", "settings-sso-policy", "settings-sso-domain-add"
)
def test_org_bs_changes_land_in_org_b_only(cast: Any, acme_sso: Any, client: Any, settings: Any) -> None:
    client.force_login(cast.charlie)
    saved = client.post(
        "/settings/sso/oidc/", {"server_url": "https://globex.okta.com", "client_id": "globex", "secret": "g"}
    )
    assert saved.status_code == 302
    client.post("/settings/sso/roles/", {"default_role": "admin", "role_claim": "groups", "role_map": "x = admin"})
    client.post("/settings/sso/domains/", {"domain": "globex.test"})
    refused = client.post("/settings/sso/policy/", {"sso_required": "on"})  # no verified domain yet
    assert refused.status_code == 400 and "verify at least one domain" in refused.content.decode()
    saml = client.post(
        "/settings/sso/saml/", {"entity_id": "https://idp", "sso_url": "https://idp/sso", "x509cert": "MIIB"}
    )
    assert saml.status_code == 302
    acme = SsoConnection.objects.get(organization=cast.org_a)
    assert (acme.social_app.client_id, acme.default_role, acme.role_map) == ("acme-client", "member", {})
    assert acme.social_app.settings["server_url"] == "http://127.0.0.1:9/"
    assert list(SsoDomain.objects.filter(organization=cast.org_a).values_list("domain", flat=True)) == ["acme.test"]
    assert SsoConnection.objects.get(organization=cast.org_b).protocol == "saml"
    assert SocialApp.objects.count() == 2


def test_refused_input_is_a_400_under_its_field_and_nothing_is_saved(cast: Any, client: Any) -> None:
    client.force_login(cast.alice)
    response = client.post("/settings/sso/oidc/", {"server_url": "ftp://x", "client_id": "c", "secret": "s"})
    assert response.status_code == 400
    assert "enter the issuer URL as an https:// address" in response.content.decode()
    assert not SsoConnection.objects.exists()


@pytest.mark.cross_tenant("sso-start")
def test_the_start_page_sends_an_address_to_its_own_organizations_provider_only(
    cast: Any, acme_sso: Any, client: Any
) -> None:
    assert client.get("/sso/?next=/settings/").status_code == 200
    # globex has no provider: its people are not sent to acme's
    refused = client.post("/sso/", {"email": "charlie@globex.test"})
    assert refused.status_code == 400 and "No organization has set up single sign-on" in refused.content.decode()
    # an unverified domain of acme's is no way to acme's provider either
    SsoDomain.objects.create(organization=cast.org_a, domain="unproven.test", token="t")
    assert client.post("/sso/", {"email": "x@unproven.test"}).status_code == 400


def test_the_start_page_keeps_a_safe_next_and_drops_another_sites(cast: Any, client: Any) -> None:
    page = client.get("/sso/?next=https://evil.example/steal")
    assert b"evil.example" not in page.content
    kept = client.get("/sso/?next=/oauth/authorize/%3Fclient_id%3Dx")
    assert b'name="next" value="/oauth/authorize/?client_id=x"' in kept.content


def test_a_member_who_joined_through_sso_has_no_personal_organization(cast: Any, acme_sso: Any) -> None:
    """allauth's sign-up signal of an SSO sign-up does not provision the self-service organization."""
    from allauth.account.signals import user_signed_up

    from tests.factories import UserFactory

    dana = UserFactory(email="dana@acme.test")
    user_signed_up.send(sender=dana.__class__, request=None, user=dana, sociallogin=object())
    assert not Membership.objects.filter(user=dana).exists()


def test_the_roles_form_saves_admitting_mapped_groups_only_and_shows_it_checked(
    cast: Any, acme_sso: Any, client: Any
) -> None:
    client.force_login(cast.alice)
    saved = client.post(
        "/settings/sso/roles/",
        {"default_role": "member", "role_claim": "groups", "role_map": "eng = member", "groups_required": "on"},
    )
    assert saved.status_code == 302
    assert SsoConnection.objects.get(organization=cast.org_a).groups_required
    assert 'name="groups_required" id="sso-groups-required" checked' in client.get("/settings/sso/").content.decode()
    client.post("/settings/sso/roles/", {"default_role": "member", "role_claim": "groups", "role_map": "eng = member"})
    assert not SsoConnection.objects.get(organization=cast.org_a).groups_required
