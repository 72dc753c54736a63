"""Search's session settings stored as the role's defaults, for connections that come through a transaction
pooler without startup options (docs/operations.md#pgbouncer-in-transaction-pooling)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import connection

from reasoningbank.db_session import session_defaults_store, session_defaults_stored


def _fresh_connection_setting(name: str) -> str | None:
    """A new connection as PgBouncer opens it: the service's database and role, no startup options."""
    params: dict[str, Any] = dict(connection.get_connection_params())
    for key in ("options", "cursor_factory", "context"):
        params.pop(key, None)
    with psycopg.connect(**params, autocommit=True) as fresh:
        row = fresh.execute("SELECT current_setting(%s, true)", [name]).fetchone()
    return None if row is None else row[0]


@pytest.fixture
def role_defaults_cleared() -> Any:
    yield
    with connection.cursor() as cursor:  # the test database is the test run's own, but it outlives this test
        cursor.execute("SELECT format('ALTER ROLE %I IN DATABASE %I RESET ALL', current_user, current_database())")
        cursor.execute(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_connection_without_startup_options_gets_search_s_hnsw_settings_once_stored(
    settings: Any, role_defaults_cleared: Any
) -> None:
    settings.DATABASE_SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "77"}
    assert _fresh_connection_setting("hnsw.ef_search") != "77"

    stored = session_defaults_store()

    assert stored == settings.DATABASE_SESSION_SETTINGS
    assert session_defaults_stored() == {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "77"}
    assert _fresh_connection_setting("hnsw.iterative_scan") == "relaxed_order"
    assert _fresh_connection_setting("hnsw.ef_search") == "77"


@pytest.mark.django_db(transaction=True)
def test_storing_them_again_with_another_value_replaces_the_first(settings: Any, role_defaults_cleared: Any) -> None:
    settings.DATABASE_SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "60"}
    session_defaults_store()
    settings.DATABASE_SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "90"}
    session_defaults_store()

    assert session_defaults_stored()["hnsw.ef_search"] == "90"
