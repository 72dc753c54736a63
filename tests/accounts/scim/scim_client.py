"""A SCIM client for the tests: Django's test client with an org's SCIM token and SCIM's media type."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from accounts.scim.services_tokens import scim_token_create

BASE = "/scim/v2"
SCIM_JSON = "application/scim+json"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class Scim:
    def __init__(self, raw: str | None) -> None:
        self.client = Client()
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"} if raw else {}

    def _send(self, method: str, path: str, body: Any = None, raw_body: str | None = None) -> Any:
        data = raw_body if raw_body is not None else (json.dumps(body) if body is not None else "")
        return getattr(self.client, method)(BASE + path, data=data, content_type=SCIM_JSON, **self.headers)

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(BASE + path, params, **self.headers)

    def post(self, path: str, body: Any = None, *, raw_body: str | None = None) -> Any:
        return self._send("post", path, body, raw_body)

    def put(self, path: str, body: Any = None, *, raw_body: str | None = None) -> Any:
        return self._send("put", path, body, raw_body)

    def patch(self, path: str, body: Any = None, *, raw_body: str | None = None) -> Any:
        return self._send("patch", path, body, raw_body)

    def delete(self, path: str) -> Any:
        return self.client.delete(BASE + path, **self.headers)


def scim_for(org: Any, *, label: str = "Okta") -> Scim:
    _, raw = scim_token_create(organization=org, label=label, actor=None)
    return Scim(raw)


def user_body(email: str, **extra: Any) -> dict[str, Any]:
    return {"schemas": [USER_SCHEMA], "userName": email, "active": True, **extra}


def patch_body(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH_SCHEMA], "Operations": list(operations)}


def assert_scim_error(response: Any, status: int, scim_type: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith(SCIM_JSON)
    body = response.json()
    assert body["schemas"] == [ERROR_SCHEMA]
    assert body["status"] == str(status)
    assert body["detail"]
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return dict(body)
