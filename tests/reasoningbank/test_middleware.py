"""A database that cannot be reached is a fast 503 with a clear body (reasoningbank/middleware.py and the
MCP app's BearerTokenMiddleware), never a traceback page; a failing query stays an ordinary error."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import psycopg
import psycopg.errors
import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.core.handlers.exception import response_for_exception
from django.db import IntegrityError, InterfaceError, OperationalError
from django.test import RequestFactory
from psycopg_pool import PoolTimeout

from accounts import mcp_auth
from accounts.tokens import services as account_services
from reasoningbank.middleware import DatabaseUnavailableMiddleware, database_unavailable

EXPECTED_BODY = {
    "detail": "The database is unavailable right now; try again in a few seconds.",
    "code": "database_unavailable",
    "errors": {},
}


def _wrapped(cause: Exception, wrapper: type[Exception] = OperationalError) -> Exception:
    """What Django raises: its own error class, the driver's error as the cause."""
    error = wrapper(str(cause))
    error.__cause__ = cause
    return error


def _database_down() -> Exception:
    return _wrapped(psycopg.OperationalError('connection failed: connection to server on socket "/x/.s.PGSQL" failed'))


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (_database_down(), True),
        (_wrapped(PoolTimeout("couldn't get a connection after 3.00 sec")), True),
        (_wrapped(psycopg.InterfaceError("connection already closed"), InterfaceError), True),
        (_wrapped(psycopg.errors.AdminShutdown("terminating connection due to administrator command")), True),
        (_wrapped(psycopg.errors.ConnectionFailure("connection failure")), True),
        (_wrapped(psycopg.errors.DeadlockDetected("deadlock detected")), False),
        (_wrapped(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")), False),
        (_wrapped(psycopg.errors.UniqueViolation("duplicate key"), IntegrityError), False),
        (ValueError("not a database error"), False),
    ],
)
def test_only_errors_that_mean_the_database_cannot_be_reached_count(error: Exception, unavailable: bool) -> None:
    assert database_unavailable(error) is unavailable


def test_an_api_request_without_a_database_is_a_503_with_the_error_body(cast, token_client, monkeypatch) -> None:
    client = token_client(cast.org_a)

    def lookup_fails(*args: Any, **kwargs: Any) -> None:
        raise _database_down()

    monkeypatch.setattr(account_services, "token_authenticate", lookup_fails)
    response = client.get("/api/v1/me")

    assert response.status_code == 503
    assert response.json() == EXPECTED_BODY
    assert response["Retry-After"] == "5"


def test_a_dashboard_page_without_a_database_is_a_small_503_page(cast, client, monkeypatch) -> None:
    client.force_login(cast.alice)

    def load_fails(self: SessionStore) -> dict[str, Any]:
        raise _database_down()

    monkeypatch.setattr(SessionStore, "load", load_fails)
    response = client.get("/settings/tokens/")

    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert "cannot reach its database" in response.content.decode()
    assert "Traceback" not in response.content.decode()


def test_a_failing_query_is_not_reported_as_a_missing_database(cast, token_client, monkeypatch) -> None:
    client = token_client(cast.org_a)
    client.raise_request_exception = False

    def deadlocks(*args: Any, **kwargs: Any) -> None:
        raise _wrapped(psycopg.errors.DeadlockDetected("deadlock detected"))

    monkeypatch.setattr(account_services, "token_authenticate", deadlocks)
    assert client.get("/api/v1/me").status_code == 500


def test_a_database_error_outside_the_view_replaces_its_500_too() -> None:
    # Django turns an exception raised in a middleware into its 500 response before the outer
    # middleware sees it; the request is marked through got_request_exception instead.
    def inner_middleware(request: Any) -> Any:
        try:
            raise _database_down()
        except Exception as exc:
            return response_for_exception(request, exc)

    response = DatabaseUnavailableMiddleware(inner_middleware)(RequestFactory().get("/api/v1/me"))

    assert response.status_code == 503
    assert json.loads(response.content) == EXPECTED_BODY


def test_an_ordinary_500_outside_the_view_stays_a_500() -> None:
    def inner_middleware(request: Any) -> Any:
        try:
            raise RuntimeError("a bug")
        except Exception as exc:
            return response_for_exception(request, exc)

    assert DatabaseUnavailableMiddleware(inner_middleware)(RequestFactory().get("/")).status_code == 500


@pytest.mark.anyio
async def test_the_mcp_endpoint_without_a_database_is_a_503_with_the_same_body(monkeypatch) -> None:
    reached: list[str] = []

    async def inner_app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])

    def lookup_fails(*args: Any) -> None:
        raise _database_down()

    monkeypatch.setattr(mcp_auth, "_authenticate", lookup_fails)
    app = mcp_auth.BearerTokenMiddleware(inner_app)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://testserver") as http:
        response = await http.post("/mcp", json={}, headers={"Authorization": "Bearer rb_whatever"})

    assert response.status_code == 503
    assert response.json() == EXPECTED_BODY
    assert response.headers["retry-after"] == "5"
    assert reached == []
