"""Client ID Metadata Documents (docs/oauth.md#client-registration): a client named by its metadata URL,
fetched under limits. The documents are served from a loopback server in this process (no network):
loopback and http are development switches, off by default."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3
from django.test import Client
from oauth2_provider.cimd import CIMDError
from oauth2_provider.models import Application

from accounts.models import OAuthConnection
from accounts.oauth.cimd import RestrictedMetadataFetcher
from tests.accounts.oauth.oauth_flow import REDIRECT_URI, Flow
from tests.http_thread import serving

pytestmark = pytest.mark.django_db


class DocumentServer:
    def __init__(self) -> None:
        self.documents: dict[str, tuple[int, str, bytes]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, kind, body = server.documents.get(self.path, (404, "text/plain", b"not found"))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def publish(self, path: str, **overrides: Any) -> str:
        url = self.base + path
        document = {
            "client_id": url,
            "client_name": "Metadata client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **overrides,
        }
        self.documents[path] = (200, "application/json", json.dumps(document).encode())
        return url


@pytest.fixture
def documents() -> Iterator[DocumentServer]:
    server = DocumentServer()
    with serving(server.httpd):
        yield server


@pytest.fixture
def development(settings: Any) -> None:
    settings.OAUTH_CIMD_ALLOW_HTTP = True
    settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES = True


@pytest.fixture
def alice_web(cast: Any) -> Client:
    client = Client()
    client.force_login(cast.alice)
    return client


def test_a_client_named_by_its_metadata_url_connects(
    cast: Any, development: None, documents: DocumentServer, alice_web: Client
) -> None:
    url = documents.publish("/clients/agent.json")
    flow = Flow(url)
    page = alice_web.get(flow.authorize_url())
    assert page.status_code == 200 and "Metadata client" in page.content.decode()
    tokens = flow.tokens(alice_web, org="acme")
    assert tokens["access_token"].startswith("rbo_")
    application = Application.objects.get(client_id=url)
    assert application.registration_source == "cimd" and application.client_type == "public"
    assert OAuthConnection.objects.get().application == application


def test_http_and_loopback_documents_are_refused_by_default(
    cast: Any, documents: DocumentServer, alice_web: Client
) -> None:
    url = documents.publish("/clients/default.json")
    response = alice_web.get(Flow(url).authorize_url())
    assert response.status_code == 400 and b"Invalid client_id" in response.content
    assert not Application.objects.filter(client_id=url).exists()


def test_loopback_needs_the_private_address_switch_too(
    cast: Any, settings: Any, documents: DocumentServer, alice_web: Client
) -> None:
    settings.OAUTH_CIMD_ALLOW_HTTP = True  # http, but not internal addresses
    url = documents.publish("/clients/loopback.json")
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id=url).exists()


def test_an_oversized_document_is_refused(
    cast: Any, settings: Any, development: None, documents: DocumentServer, alice_web: Client
) -> None:
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_MAX_DOCUMENT_SIZE": 1024}
    url = documents.publish("/clients/huge.json", client_name="x" * 5000)
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id=url).exists()


def test_a_document_naming_another_client_id_is_refused(
    cast: Any, development: None, documents: DocumentServer, alice_web: Client
) -> None:
    url = documents.publish("/clients/liar.json", client_id="https://trusted.example/client.json")
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id__in=[url, "https://trusted.example/client.json"]).exists()


def test_a_document_with_a_secret_is_refused(
    cast: Any, development: None, documents: DocumentServer, alice_web: Client
) -> None:
    url = documents.publish("/clients/secret.json", token_endpoint_auth_method="client_secret_basic")
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id=url).exists()


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("javascript-logo", {"logo_uri": "javascript:alert(1)"}),
        ("nul-name", {"client_name": "Metadata\x00client"}),
        # the limits of Dynamic Client Registration hold here too (test_oauth_registration_limits.py);
        # the development switch is on, so only what is never a destination stands for the addresses
        (
            "eleven-redirect-uris",
            {"redirect_uris": [REDIRECT_URI, *(f"http://127.0.0.1:{n}/cb" for n in range(1, 11))]},
        ),
        ("unspecified-logo", {"logo_uri": "https://0.0.0.0/logo.png"}),
        ("mapped-unspecified-keys", {"jwks_uri": "https://[::ffff:0.0.0.0]/jwks.json"}),
    ],
)
def test_a_document_breaking_the_registration_policy_is_refused_quietly(
    cast: Any, development: None, documents: DocumentServer, alice_web: Client, name: str, overrides: Any, caplog: Any
) -> None:
    url = documents.publish(f"/clients/{name}.json", **overrides)
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id=url).exists()
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []  # no traceback logged


def test_a_document_nested_too_deeply_is_refused_quietly(
    cast: Any, development: None, documents: DocumentServer, alice_web: Client, caplog: Any
) -> None:
    url = documents.base + "/clients/deep.json"
    document = json.dumps({"client_id": url, "client_name": "Deep", "redirect_uris": [REDIRECT_URI]})
    deep = document[:-1] + ', "extra": ' + "[" * 3000 + "]" * 3000 + "}"
    documents.documents["/clients/deep.json"] = (200, "application/json", deep.encode())
    assert alice_web.get(Flow(url).authorize_url()).status_code in (400, 401)
    assert not Application.objects.filter(client_id=url).exists()
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


@pytest.mark.parametrize(
    ("field", "uri"),
    [
        ("logo_uri", "https://169.254.169.254/logo.png"),
        ("jwks_uri", "https://[::169.254.169.254]/jwks.json"),
        ("client_uri", "https://[64:ff9b:1::a9fe:a9fe]/"),
        ("policy_uri", "https://2130706433/privacy"),
        ("tos_uri", "https://[fec0::1]/terms"),
    ],
)
def test_a_fetched_document_naming_a_url_on_an_internal_address_is_refused(field: str, uri: str) -> None:
    """The document as the fetch reads it, with the switches off (as deployed)."""
    document = {"client_id": "https://agent.example/client.json", "redirect_uris": [REDIRECT_URI], field: uri}
    response = urllib3.HTTPResponse(
        body=io.BytesIO(json.dumps(document).encode()),
        headers={"Content-Type": "application/json"},
        status=200,
        preload_content=False,
    )
    with pytest.raises(CIMDError, match=f"{field}: must name a host on public addresses"):
        RestrictedMetadataFetcher()._read_document(response)
