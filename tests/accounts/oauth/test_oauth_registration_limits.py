"""Dynamic Client Registration's limits (docs/oauth.md#client-registration): at most ten redirect URIs per
client, and the URLs the service might fetch or show — ``client_uri``, ``logo_uri``, ``tos_uri``,
``policy_uri``, ``jwks_uri`` — on public addresses only (docs/security/address-guard.md), on a
registration and on its update. Names resolve through a table (tests/dns_table.py): no DNS."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import Application

from accounts.oauth.protocol import CLIENT_METADATA_URI_FIELDS, REDIRECT_URIS_MAX
from tests.accounts.oauth.oauth_flow import REDIRECT_URI, register
from tests.dns_table import DnsTable

pytestmark = pytest.mark.django_db

PUBLIC_IP = "93.184.216.34"


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> DnsTable:
    table = DnsTable({"agent.example": [PUBLIC_IP]})
    monkeypatch.setattr(socket, "getaddrinfo", table)
    return table


def _refused(response: Any, error: str) -> str:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == error and body["code"] == error
    return str(body["error_description"])


# --- redirect URIs --------------------------------------------------------------------------------


def test_a_client_registers_ten_redirect_uris() -> None:
    uris = [f"http://127.0.0.1:{5000 + n}/callback" for n in range(REDIRECT_URIS_MAX)]
    response = register(Client(), redirect_uris=uris)
    assert response.status_code == 201 and response.json()["redirect_uris"] == uris


@pytest.mark.parametrize("count", [REDIRECT_URIS_MAX + 1, 10_000])
def test_more_than_ten_redirect_uris_is_a_400_naming_the_field_and_the_limit(count: int) -> None:
    uris = [f"https://app.example/cb/{n}" for n in range(count)]
    description = _refused(register(Client(), redirect_uris=uris), "invalid_redirect_uri")
    assert description == f"redirect_uris: at most 10 redirect URIs per client (got {count})"
    assert not Application.objects.exists()


def test_a_redirect_uri_longer_than_2000_characters_is_refused() -> None:
    description = _refused(
        register(Client(), redirect_uris=["https://app.example/" + "a" * 2000]), "invalid_redirect_uri"
    )
    assert "2000 characters" in description


def test_an_update_cannot_grow_the_list_past_the_limit() -> None:
    created = register(Client()).json()
    response = Client().put(
        f"/oauth/register/{created['client_id']}/",
        data={"redirect_uris": [f"https://app.example/{n}" for n in range(11)], "token_endpoint_auth_method": "none"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {created['registration_access_token']}",
    )
    assert "at most 10" in _refused(response, "invalid_redirect_uri")
    assert Application.objects.get(client_id=created["client_id"]).redirect_uris == REDIRECT_URI


def test_one_clients_registration_token_cannot_change_another_clients_redirect_uris() -> None:
    """Registrations belong to no organization; a client's token is its only key, and opens no other."""
    ours, theirs = register(Client()).json(), register(Client(), name="Other agent").json()
    response = Client().put(
        f"/oauth/register/{theirs['client_id']}/",
        data={"redirect_uris": ["https://attacker.example/cb"], "token_endpoint_auth_method": "none"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ours['registration_access_token']}",
    )
    assert response.status_code == 401
    assert Application.objects.get(client_id=theirs["client_id"]).redirect_uris == REDIRECT_URI


def test_loopback_redirect_uris_of_native_apps_stay_allowed(dns: DnsTable) -> None:
    """RFC 8252 section 7.3: a native app listens on the loopback interface; the address guard is for
    the URLs the service itself would reach, not for where the user's browser goes back to."""
    uris = ["http://127.0.0.1:5555/cb", "http://[::1]:5555/cb", "http://localhost:5555/cb"]
    response = register(Client(), redirect_uris=uris, logo_uri="https://agent.example/logo.png")
    assert response.status_code == 201, response.content


# --- the URLs the service might fetch or show --------------------------------------------------------

INTERNAL_URLS = [
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.1/logo.png",
    "https://127.0.0.1/",
    "https://[::1]/",
    "https://[::169.254.169.254]/",
    "https://[::ffff:0:169.254.169.254]/",
    "https://[64:ff9b:1::a9fe:a9fe]/",
    "https://[fec0::1]/",
    "https://2130706433/",
    "https://0x7f.1/",
    "https://0.0.0.0/",
]


@pytest.mark.parametrize("field", CLIENT_METADATA_URI_FIELDS)
@pytest.mark.parametrize("uri", INTERNAL_URLS)
def test_a_metadata_url_on_an_internal_literal_address_is_refused(dns: DnsTable, field: str, uri: str) -> None:
    metadata: dict[str, Any] = {field: uri}
    description = _refused(register(Client(), **metadata), "invalid_client_metadata")
    assert description.startswith(f"{field}: must name a host on public addresses")
    assert not Application.objects.exists()
    assert dns.asked == []  # a literal is read, never resolved


@pytest.mark.parametrize("answer", ["10.20.30.40", "127.0.0.1", "::ffff:169.254.169.254", "fd00::1"])
def test_a_metadata_url_whose_host_resolves_inside_is_refused(dns: DnsTable, answer: str) -> None:
    dns.names["keys.agent.example"] = [PUBLIC_IP, answer]  # one internal answer refuses the host
    description = _refused(
        register(Client(), jwks_uri="https://keys.agent.example/jwks.json"), "invalid_client_metadata"
    )
    assert description.startswith("jwks_uri: must name a host on public addresses") and answer in description


def test_a_metadata_url_whose_host_does_not_resolve_is_refused(dns: DnsTable) -> None:
    description = _refused(register(Client(), logo_uri="https://nowhere.example/logo.png"), "invalid_client_metadata")
    assert "could not resolve" in description


def test_metadata_urls_on_public_hosts_are_accepted_and_one_host_is_resolved_once(dns: DnsTable) -> None:
    response = register(
        Client(),
        client_uri="https://agent.example/",
        logo_uri="https://agent.example/logo.png",
        tos_uri="https://agent.example/terms",
        policy_uri="https://agent.example/privacy",
        jwks_uri="https://agent.example/jwks.json",
    )
    assert response.status_code == 201, response.content
    assert dns.asked == ["agent.example"]


def test_an_update_is_held_to_the_same_addresses(dns: DnsTable) -> None:
    created = register(Client()).json()
    response = Client().put(
        f"/oauth/register/{created['client_id']}/",
        data={"redirect_uris": created["redirect_uris"], "logo_uri": "https://[::10.0.0.1]/logo.png",
              "token_endpoint_auth_method": "none"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {created['registration_access_token']}",
    )  # fmt: skip
    assert _refused(response, "invalid_client_metadata").startswith("logo_uri: must name a host on public addresses")


def test_the_development_switch_allows_internal_hosts_but_never_the_unspecified_address(
    dns: DnsTable, settings: Any
) -> None:
    settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES = True
    assert register(Client(), logo_uri="https://10.0.0.1/logo.png").status_code == 201
    _refused(register(Client(), logo_uri="https://[::ffff:0.0.0.0]/logo.png"), "invalid_client_metadata")
