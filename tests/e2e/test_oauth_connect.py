"""An MCP client signs in through the browser (docs/oauth.md; MCP 2026-07-28 "Authorization"), against
the live server: the official SDK's OAuth client discovers the metadata from the 401, registers (Dynamic
Client Registration), sends the person through login and consent in Chromium (PKCE), gets its tokens,
calls ``memory_search`` over MCP, refreshes, and is refused once the app is revoked under Settings →
Connected apps. No network: the redirect back to the client is caught in the browser. A client in a web
page at another origin reaches the metadata, registration and token endpoints (CORS)."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from tests.e2e.harness import Service, call, screenshot, unique
from tests.http_thread import serving

PASSWORD = "a-long-unusual-passphrase-oauth"
CALLBACK = "http://127.0.0.1:38799/callback"
WAIT = 120


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class Browser:
    """Hands the authorization URL from the SDK (on its own thread) to the test's browser, and the
    redirect back from the browser to the SDK."""

    def __init__(self) -> None:
        self.authorization_urls: queue.Queue[str] = queue.Queue()
        self.callbacks: queue.Queue[str] = queue.Queue()

    async def redirect_handler(self, url: str) -> None:
        self.authorization_urls.put(url)

    async def callback_handler(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        url = await anyio.to_thread.run_sync(lambda: self.callbacks.get(timeout=WAIT))
        params = {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
        if "code" not in params:
            raise AssertionError(f"the authorization server answered {params}")
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


def _provider(service: Service, browser: Browser, storage: MemoryStorage) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    metadata = OAuthClientMetadata(
        client_name="E2E SDK agent",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=f"{service.url}/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )


async def _agent_session(service: Service, provider: Any, title: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with Client(streamable_http_client(f"{service.url}/mcp", http_client=http), mode="2026-07-28") as client:
            recorded = await call(
                client,
                "memory_record",
                {
                    "title": title,
                    "description": "Connected through the browser with OAuth",
                    "content": "Discovered from the 401, registered, signed in, consented, exchanged with PKCE.",
                    "outcome": "success",
                    "tags": ["oauth"],
                },
            )
            found = await call(client, "memory_search", {"query": title, "min_confidence": 0})
    return recorded, found


def _sign_up_and_out(page: Any, base: str, email: str) -> None:
    page.goto(f"{base}/accounts/signup/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    page.click("form.logout button")
    page.wait_for_url(f"{base}/accounts/login/")


def _sign_in_and_consent(page: Any, browser: Browser, email: str) -> str:
    """Open the SDK's authorization URL, sign in, allow; the redirect back to the client."""
    url = browser.authorization_urls.get(timeout=WAIT)
    caught: list[str] = []

    def catch(route: Any) -> None:
        caught.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body="Signed in: you can close this window.")

    page.route(f"{CALLBACK}**", catch)
    page.goto(url)
    page.wait_for_selector("input[name=login]")  # not signed in: allauth's login page first
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#consent-form")
    screenshot(page, "oauth-consent")
    assert "E2E SDK agent" in page.content()
    page.click("button[name=allow]")
    deadline = time.monotonic() + 30
    while not caught and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert caught, f"the browser never came back to the client (at {page.url})"
    browser.callbacks.put(caught[0])
    return caught[0]


def test_an_mcp_client_connects_through_the_browser_refreshes_and_is_revoked(service: Service, page: Any) -> None:
    base = service.url
    # the 401 a client starts from names the metadata, which names the authorization server
    challenge = httpx2.post(f"{base}/mcp", json={}).headers["www-authenticate"]
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge, challenge
    prm = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == f"{base}/mcp" and prm["authorization_servers"] == [base]

    email = f"{unique('olga').lower()}@oauth.test"
    _sign_up_and_out(page, base, email)
    browser, storage = Browser(), MemoryStorage()
    provider = _provider(service, browser, storage)
    title = unique("OAuth memory")

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
        session = pool.submit(anyio.run, _agent_session, service, provider, title)
        redirect = _sign_in_and_consent(page, browser, email)
        recorded, found = session.result(timeout=WAIT)
    assert "iss=" in redirect  # RFC 9207
    assert recorded["id"].startswith("mem_")
    assert [m["id"] for m in found["memories"]] == [recorded["id"]]
    first = storage.tokens
    assert first.access_token.startswith("rbo_") and first.refresh_token.startswith("rbr_")
    assert storage.client_info.client_id  # registered by DCR

    # the access token "expires": the SDK refreshes (rotation) without a browser
    provider.context.token_expiry_time = time.time() - 1
    with ThreadPoolExecutor(1) as pool:
        _again, found_again = pool.submit(anyio.run, _agent_session, service, provider, unique("After refresh")).result(
            timeout=WAIT
        )
    assert storage.tokens.refresh_token != first.refresh_token
    assert storage.tokens.access_token != first.access_token
    assert found_again["memories"]

    # Settings → Connected apps (the user is signed in in the browser): revoke → the next request is a 401
    page.goto(f"{base}/settings/connected-apps/")
    assert "E2E SDK agent" in page.content() and email in page.content()
    screenshot(page, "oauth-connected-apps")
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke E2E SDK agent").click()
    page.wait_for_selector(".status-revoked")
    refused = httpx2.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Authorization": f"Bearer {storage.tokens.access_token}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert refused.status_code == 401, refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    refresh = httpx2.post(
        f"{base}/oauth/token/",
        data={
            "grant_type": "refresh_token",
            "refresh_token": storage.tokens.refresh_token,
            "client_id": storage.client_info.client_id,
        },
    )
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"


@pytest.fixture
def web_page_origin() -> Iterator[str]:
    """A page of a web-based client at another origin: served on loopback (Chromium lets a page
    reach a loopback server only from a loopback page) and named ``localhost``, so its origin is
    not the service's ``127.0.0.1``."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>web agent</title><p>agent</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(HTTPServer(("127.0.0.1", 0), Page)) as server:
        yield f"http://localhost:{server.server_port}"


def test_a_client_in_a_web_page_at_another_origin_discovers_registers_and_reaches_the_token_endpoint(
    service: Service, page: Any, web_page_origin: str
) -> None:
    """A browser-based client (a web MCP client or inspector) calls the metadata, registration and
    token endpoints from its own origin: Chromium lets the page read each answer only because the
    server allows it (CORS), the registration after a preflight."""
    page.goto(f"{web_page_origin}/")
    seen = page.evaluate(
        """async ([base, origin]) => {
            const meta = await (await fetch(base + "/.well-known/oauth-authorization-server")).json();
            const prm = await (await fetch(base + "/.well-known/oauth-protected-resource/mcp")).json();
            const registered = await fetch(meta.registration_endpoint, {
                method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({
                    client_name: "Web agent", redirect_uris: [origin + "/callback"],
                    grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
                    token_endpoint_auth_method: "none",
                }),
            });
            const client = await registered.json();
            const token = await fetch(meta.token_endpoint, {
                method: "POST",
                headers: {"Content-Type": "application/x-www-form-urlencoded"},
                body: new URLSearchParams({
                    grant_type: "authorization_code", code: "not-a-code", client_id: client.client_id,
                    redirect_uri: origin + "/callback", code_verifier: "x".repeat(43),
                }),
            });
            return {resource: prm.resource, registered: registered.status, client_id: client.client_id,
                    token_status: token.status, token_error: (await token.json()).error};
        }""",
        [service.url, web_page_origin],
    )
    assert seen["resource"] == f"{service.url}/mcp"
    assert seen["registered"] == 201 and seen["client_id"]
    assert seen["token_status"] == 400 and seen["token_error"] == "invalid_grant"
