"""The OAuth 2.1 authorization code flow with PKCE, driven through Django's test client
(docs/oauth.md#the-flow).

Each step is one request, so that tests can break the flow anywhere: register a client (Dynamic
Client Registration), open the consent page, decide, exchange the code, refresh.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

REDIRECT_URI = "http://127.0.0.1:38111/callback"
MCP_RESOURCE = "http://127.0.0.1:8000/mcp"
API_RESOURCE = "http://127.0.0.1:8000/api/v1"
ALL_SCOPES = ["memories:read", "memories:write", "consolidation:run"]


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(client: Client, *, name: str = "Test agent", redirect_uris: list[str] | None = None, **extra: Any) -> Any:
    body = {
        "client_name": name,
        "redirect_uris": redirect_uris or [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }
    return client.post("/oauth/register/", data=body, content_type="application/json")


@dataclass
class Flow:
    client_id: str
    redirect_uri: str = REDIRECT_URI
    scopes: list[str] = field(default_factory=lambda: list(ALL_SCOPES))
    resources: list[str] = field(default_factory=lambda: [MCP_RESOURCE])
    state: str = field(default_factory=lambda: secrets.token_urlsafe(8))
    verifier: str = ""
    challenge: str = ""
    method: str = "S256"

    def __post_init__(self) -> None:
        if not self.verifier:
            self.verifier, self.challenge = pkce_pair()

    def authorize_query(self, **override: Any) -> dict[str, Any]:
        query: dict[str, Any] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": " ".join(self.scopes),
            "state": self.state,
            "code_challenge": self.challenge,
            "code_challenge_method": self.method,
            "resource": self.resources,
        }
        query.update(override)
        return {key: value for key, value in query.items() if value is not None}

    def authorize_url(self, **override: Any) -> str:
        return "/oauth/authorize/?" + urlencode(self.authorize_query(**override), doseq=True)

    def consent(
        self,
        client: Client,
        *,
        org: str,
        scopes: list[str] | None = None,
        projects: list[int] = (),
        allow: bool = True,
        **override: Any,
    ) -> Any:
        """GET the consent page, then POST the decision with its hidden fields."""
        page = client.get(self.authorize_url(**override))
        assert page.status_code == 200, (page.status_code, page.content[:500])
        form = page.context["form"]
        data = {name: form[name].value() or "" for name in form.fields if name != "allow"}
        data["organization"] = org
        data["scopes"] = self.scopes if scopes is None else scopes
        data[f"projects-{org}"] = [str(p) for p in projects]
        if allow:
            data["allow"] = "true"
        return client.post("/oauth/authorize/", data=data)

    def code_from(self, response: Any) -> str:
        params = redirect_params(response)
        assert params.get("state") == self.state, params
        assert "code" in params, params
        return params["code"]

    def exchange(self, client: Client, code: str, **override: Any) -> Any:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "client_id": self.client_id,
            "code_verifier": self.verifier,
        }
        data.update(override)
        return client.post("/oauth/token/", data={k: v for k, v in data.items() if v is not None})

    def refresh(self, client: Client, refresh_token: str, **override: Any) -> Any:
        data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": self.client_id}
        data.update(override)
        return client.post("/oauth/token/", data=data)

    def tokens(self, client: Client, *, org: str, **consent: Any) -> dict[str, Any]:
        """The whole flow for a signed-in ``client``: consent, exchange; the token response."""
        code = self.code_from(self.consent(client, org=org, **consent))
        response = self.exchange(client, code)
        assert response.status_code == 200, response.content
        return dict(response.json())


def redirect_params(response: Any) -> dict[str, str]:
    assert response.status_code == 302, (response.status_code, getattr(response, "content", b"")[:500])
    location = response["Location"]
    assert location.startswith(REDIRECT_URI.split("/callback")[0]), location
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def dcr_client(client: Client, **kwargs: Any) -> str:
    response = register(client, **kwargs)
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])
