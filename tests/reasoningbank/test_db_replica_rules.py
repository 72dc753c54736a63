"""The read replica's pure rules (reasoningbank/db_replica_rules.py): which statements write, when a
replica is close enough to read from, how long a writer's reads stay on the primary."""

from __future__ import annotations

import pytest

from reasoningbank.db_replica_rules import lag_verdict, sticky_seconds, written_tables


@pytest.mark.parametrize(
    ("sql", "tables"),
    [
        ('INSERT INTO "memories_memory" ("id") VALUES (%s)', ["memories_memory"]),
        ('UPDATE "memories_memory" SET "title" = %s WHERE "id" = %s', ["memories_memory"]),
        ('DELETE FROM "accounts_team" WHERE "id" IN (%s)', ["accounts_team"]),
        (
            "WITH used AS (UPDATE memories_memory m SET usage_count = usage_count + 1 RETURNING m.id) "
            "INSERT INTO memories_memorysignal (memory_id) SELECT id FROM used",
            ["memories_memory", "memories_memorysignal"],
        ),
        (
            "INSERT INTO rb_throttle (key, hits) VALUES (%s, 1) "
            "ON CONFLICT (key) DO UPDATE SET hits = rb_throttle.hits + 1",
            ["rb_throttle"],
        ),
    ],
)
def test_a_statement_that_writes_names_the_tables_it_writes(sql, tables):
    assert written_tables(sql) == tables


@pytest.mark.parametrize(
    "sql",
    [
        '/* search:vector */ SELECT "m"."id" FROM memories_memory m ORDER BY m.embedding <=> %s LIMIT 20',
        'SELECT "id" FROM "memories_memorysummary" WHERE "id" IN (%s) ORDER BY "id" FOR NO KEY UPDATE',
        'SELECT "id" FROM "django_q_ormq" FOR UPDATE SKIP LOCKED',
        'SELECT "last_update", "updated_at" FROM "memories_memory"',
        "SELECT set_config('hnsw.ef_search', %s, true)",
    ],
)
def test_reads_and_row_locks_write_nothing(sql):
    assert written_tables(sql) == []


def test_a_caught_up_replica_has_no_lag_however_long_the_primary_has_been_idle():
    # an idle primary commits nothing: the time since the last replayed transaction grows for hours
    assert lag_verdict(in_recovery=True, caught_up=True, seconds_since_replay=7200.0, max_lag=5.0) == (True, 0.0, "ok")


def test_a_replica_short_of_the_primary_is_as_far_behind_as_its_last_replayed_transaction():
    assert lag_verdict(in_recovery=True, caught_up=False, seconds_since_replay=2.5, max_lag=5.0) == (True, 2.5, "ok")
    assert lag_verdict(in_recovery=True, caught_up=False, seconds_since_replay=7.5, max_lag=5.0) == (
        False,
        7.5,
        "lagging",
    )


def test_a_replica_behind_with_nothing_replayed_yet_is_not_read():
    assert lag_verdict(in_recovery=True, caught_up=False, seconds_since_replay=None, max_lag=5.0) == (
        False,
        None,
        "lagging",
    )


def test_a_server_that_is_not_a_standby_is_not_read_as_one():
    # promoted, or the primary's own address given by mistake: its rows may not be the primary's
    assert lag_verdict(in_recovery=False, caught_up=True, seconds_since_replay=None, max_lag=5.0)[0:3:2] == (
        False,
        "not_standby",
    )


def test_a_writer_stays_on_the_primary_as_long_as_a_replica_in_use_can_be_behind():
    assert sticky_seconds(max_lag=5.0, check_interval=5.0) == pytest.approx(10.0)
