"""Every REST error has one body: ``{"detail": str, "code": str, "errors": {field: [str, ...]}}``
(docs/security/http-hardening.md#one-error-shape): ``errors`` is always an object of string lists, never
a list, never absent, never a Python repr such as ``ErrorDetail(string=…)``."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

MEMORIES = "/api/v1/memories"


def assert_error_shape(body: Any) -> None:
    assert set(body) == {"detail", "code", "errors"}, body
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["code"], str) and body["code"]
    assert isinstance(body["errors"], dict)
    for field, messages in body["errors"].items():
        assert isinstance(field, str)
        assert isinstance(messages, list) and all(isinstance(m, str) for m in messages), body
    assert "ErrorDetail" not in str(body)


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def test_a_too_long_tag_is_named_by_its_position_not_a_python_repr(alice):
    response = alice.post(
        MEMORIES,
        {"title": "t", "description": "d", "content": "c", "outcome": "success", "tags": ["ok", "x" * 500]},
        format="json",
    )

    assert response.status_code == 400
    body = response.json()
    assert_error_shape(body)
    assert list(body["errors"]) == ["tags"]
    assert body["errors"]["tags"][0].startswith("item 1: ")
    assert body["detail"].startswith("Invalid input: tags: item 1: ")


def test_a_body_that_is_not_an_object_has_its_error_under_non_field_errors(alice):
    response = alice.post(MEMORIES, [1, 2], format="json")

    assert response.status_code == 400
    assert_error_shape(response.json())
    assert list(response.json()["errors"]) == ["non_field_errors"]


def test_malformed_json_is_a_400_with_the_error_shape(alice):
    response = alice.generic("POST", MEMORIES, "{not json", content_type="application/json")

    assert response.status_code == 400
    assert_error_shape(response.json())
    assert response.json()["code"] == "parse_error" and response.json()["errors"] == {}


def test_errors_without_a_field_carry_an_empty_errors_object(cast, alice, token_client):
    no_token = APIClient().get(MEMORIES)
    bad_token = APIClient(HTTP_AUTHORIZATION="Bearer rb_nope").get(MEMORIES)
    no_scope = token_client(cast.org_a, scopes=["memories:read"]).post(MEMORIES, {}, format="json")
    wrong_method = alice.delete(MEMORIES)
    form = alice.post(MEMORIES, {"title": "t"})

    for response, status, code in [
        (no_token, 401, "not_authenticated"),
        (bad_token, 401, "authentication_failed"),
        (no_scope, 403, "permission_denied"),
        (wrong_method, 405, "method_not_allowed"),
        (form, 415, "unsupported_media_type"),
    ]:
        assert response.status_code == status
        assert_error_shape(response.json())
        assert (response.json()["code"], response.json()["errors"]) == (code, {})
    assert no_token["WWW-Authenticate"].startswith("Bearer")


def test_a_service_error_without_a_field_has_an_empty_errors_object(alice):
    memory_id = alice.post(
        MEMORIES, {"title": "t", "description": "d", "content": "Retry, then back off", "outcome": "success"}, "json"
    ).json()["id"]

    response = alice.post(f"{MEMORIES}/{memory_id}/restore", format="json")

    assert response.status_code == 409
    assert_error_shape(response.json())


def test_every_bad_field_is_listed_and_the_detail_says_how_many_more(alice):
    response = alice.post(MEMORIES, {"title": 5, "outcome": "great"}, format="json")

    body = response.json()
    assert_error_shape(body)
    assert {"title", "outcome", "description", "content"} <= set(body["errors"])
    assert "more field" in body["detail"]


@pytest.mark.parametrize("method", ["get", "post", "delete"])
@pytest.mark.parametrize("path", ["/api/v1/memories/a/b", "/api/v1/nope", "/api/v2/memories"])
def test_an_unknown_api_url_is_a_json_404_in_the_error_shape(cast, make_token, method, path):
    raw, _ = make_token(cast.org_a)
    client = APIClient(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {raw}")  # as a real client

    response = getattr(client, method)(path)

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert_error_shape(response.json())
    assert response.json()["code"] == "not_found"
