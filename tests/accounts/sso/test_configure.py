"""Configuring an organization's identity provider: one allauth SocialApp per organization, checked input,
audited without its secret."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.socialaccount.models import SocialApp

from accounts.models import AuditEvent, SsoConnection
from accounts.sso.services import sso_oidc_configure, sso_roles_set, sso_saml_configure
from reasoningbank.errors import InvalidInput

pytestmark = pytest.mark.django_db

SAML_METADATA = """<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/saml">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data>
      <ds:X509Certificate>MIIBszCCARygAwIBAgIJAKexample</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
      Location="https://idp.example.com/saml/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>"""


def test_an_oidc_provider_is_one_social_app_named_for_the_organization(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    connection = sso_oidc_configure(
        principal=alice, server_url="https://acme.okta.com", client_id="0oa1", secret="s3cret"
    )
    app = connection.social_app
    assert (app.provider, app.provider_id, app.client_id, app.secret) == (
        "openid_connect",
        "org-acme",
        "0oa1",
        "s3cret",
    )
    assert app.settings == {"server_url": "https://acme.okta.com", "oauth_pkce_enabled": True}
    # a blank secret keeps the stored one; the audit row never holds it
    sso_oidc_configure(principal=alice, server_url="https://acme.okta.com/oauth2/default", client_id="0oa1", secret="")
    assert SocialApp.objects.get(pk=app.pk).secret == "s3cret"
    events = list(AuditEvent.objects.filter(verb="sso.configure").order_by("pk"))
    assert [event.data["secret_changed"] for event in events] == [True, False]
    assert all("s3cret" not in str(event.data) for event in events)


@pytest.mark.parametrize(
    ("server_url", "client_id", "secret", "field"),
    [
        ("http://acme.okta.com", "c", "s", "server_url"),
        ("acme.okta.com", "c", "s", "server_url"),
        ("https://acme.okta.com", " ", "s", "client_id"),
        ("https://acme.okta.com", "c", "", "secret"),
    ],
)
def test_oidc_input_that_cannot_work_is_refused_naming_the_field(
    cast: Any, server_url: str, client_id: str, secret: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        sso_oidc_configure(
            principal=cast.principal(cast.alice), server_url=server_url, client_id=client_id, secret=secret
        )
    assert refused.value.field == field
    assert not SocialApp.objects.exists() and not SsoConnection.objects.exists()


def test_saml_metadata_xml_gives_the_idp_and_switching_protocol_replaces_the_app(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    old = sso_oidc_configure(principal=alice, server_url="https://acme.okta.com", client_id="c", secret="s").social_app
    connection = sso_saml_configure(principal=alice, metadata_xml=SAML_METADATA)
    app = connection.social_app
    assert connection.protocol == "saml" and app.provider == "saml" and app.client_id == "acme"
    assert app.settings["idp"] == {
        "entity_id": "https://idp.example.com/saml",
        "x509cert": "MIIBszCCARygAwIBAgIJAKexample",
        "sso_url": "https://idp.example.com/saml/sso",
    }
    assert app.settings["advanced"]["want_assertion_signed"] is True
    assert not SocialApp.objects.filter(pk=old.pk).exists()
    assert SsoConnection.objects.count() == 1


def test_saml_input_is_checked(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    with pytest.raises(InvalidInput, match="the metadata"):
        sso_saml_configure(principal=alice, metadata_xml="<html/>")
    with pytest.raises(InvalidInput, match="entity id") as refused:
        sso_saml_configure(principal=alice, metadata_url="https://login.microsoftonline.com/x/federationmetadata.xml")
    assert refused.value.field == "entity_id"
    with pytest.raises(InvalidInput, match="signing certificate"):
        sso_saml_configure(principal=alice, entity_id="https://idp", sso_url="https://idp/sso")
    connection = sso_saml_configure(
        principal=alice,
        entity_id="https://idp",
        sso_url="https://idp/sso",
        x509cert="-----BEGIN CERTIFICATE-----\nMIIB\nxyz\n-----END CERTIFICATE-----\n",
    )
    assert connection.social_app.settings["idp"]["x509cert"] == "MIIBxyz"


def test_roles_need_a_provider_and_a_role_below_owner(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    with pytest.raises(InvalidInput, match="configure the identity provider first"):
        sso_roles_set(principal=alice, default_role="member", role_claim="groups", role_map="")
    sso_oidc_configure(principal=alice, server_url="https://acme.okta.com", client_id="c", secret="s")
    with pytest.raises(InvalidInput, match="viewer, member or admin"):
        sso_roles_set(principal=alice, default_role="owner", role_claim="groups", role_map="")
    with pytest.raises(InvalidInput, match="line 1"):
        sso_roles_set(principal=alice, default_role="member", role_claim="groups", role_map="admins = owner")
    connection = sso_roles_set(principal=alice, default_role="viewer", role_claim="roles", role_map="eng = member")
    assert (connection.default_role, connection.role_claim, connection.role_map) == (
        "viewer",
        "roles",
        {"eng": "member"},
    )


def test_a_provider_on_a_private_address_is_refused_unless_allowed(cast: Any, settings: Any) -> None:
    """An admin of one tenant names the URL: the service must not fetch from its own network for them."""
    import requests

    from accounts.sso.outbound import guarded_session

    settings.SSO_ALLOW_HTTP = True
    settings.SSO_ALLOW_PRIVATE_ADDRESSES = False
    with pytest.raises(InvalidInput, match="address refused") as refused:
        sso_saml_configure(
            principal=cast.principal(cast.alice), metadata_url="http://169.254.169.254/latest/", entity_id="https://idp"
        )
    assert refused.value.field == "metadata_url"
    with pytest.raises(requests.ConnectionError, match="non-public address"), guarded_session(timeout=1) as session:
        session.get("http://127.0.0.1:9/.well-known/openid-configuration")
    assert not SsoConnection.objects.exists()
