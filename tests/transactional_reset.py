"""A transactional test's database emptied in milliseconds instead of half a second.

Django ends every ``TransactionTestCase`` (pytest-django's ``transactional_db``, ``live_server``) with
``flush``: a ``TRUNCATE`` of every table (new files for each table and index: about 0.4 s of PostgreSQL)
and then the ``post_migrate`` signal, which writes the content types and permissions again (about 0.1 s
of Python). About 500 tests pay it. Here instead: one query finds the tables the test left rows in and
those rows are deleted (every foreign key Django makes is deferred to the commit, so in any order), and
the content types and permissions ``post_migrate`` made are kept rather than rewritten.

What the full flush guarantees is kept: the tables ``post_migrate`` fills are checked against what they
held after the last full flush, and when a test changed them (or a delete is refused), the full flush
runs as before. docs/contributing.md#running-the-tests.
"""

from __future__ import annotations

from typing import Any

# what post_migrate writes after a flush (django.contrib.contenttypes and django.contrib.auth)
POST_MIGRATE_TABLES = ("django_content_type", "auth_permission")

# per database: a digest of POST_MIGRATE_TABLES as the last full flush left them
after_flush: dict[str, str] = {}


def _post_migrate_digest(cursor: Any) -> str:
    parts = [
        f"(SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM {table} t)"
        for table in POST_MIGRATE_TABLES
    ]
    cursor.execute(f"SELECT {' || '.join(parts)}")
    return cursor.fetchone()[0]


def database_key(connection: Any) -> str:
    return f"{connection.alias}:{connection.settings_dict['NAME']}"


def tables_clear(connection: Any) -> bool:
    """Delete every row a test left in ``connection``'s tables, keeping the content types and
    permissions; False (and nothing deleted) when those are not as the last full flush left them or the
    database refuses (a test that broke its connection): then Django's flush does it."""
    from django.db import DatabaseError, transaction

    quote = connection.ops.quote_name
    try:
        with connection.cursor() as cursor:
            if after_flush.get(database_key(connection)) != _post_migrate_digest(cursor):
                return False
            tables = [
                table
                for table in connection.introspection.django_table_names(only_existing=True, include_views=False)
                if table not in POST_MIGRATE_TABLES
            ]
            cursor.execute(
                " UNION ALL ".join(f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables),
                tables,
            )
            left = [row[0] for row in cursor.fetchall()]
        if left:
            with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
                for table in left:
                    cursor.execute(f"DELETE FROM {quote(table)}")
    except DatabaseError:
        return False
    return True


def flushed(connection: Any) -> None:
    """Note what a full flush left in the tables ``post_migrate`` fills."""
    with connection.cursor() as cursor:
        after_flush[database_key(connection)] = _post_migrate_digest(cursor)


def transactional_teardown_install() -> None:
    """``TransactionTestCase``'s teardown empties the tables with :func:`tables_clear`, falling back to
    Django's flush (``TestCase``, which rolls back, is not touched)."""
    from django.db import connections
    from django.test.testcases import TransactionTestCase

    full_flush = TransactionTestCase._fixture_teardown
    if getattr(full_flush, "fast", False):
        return

    def fixture_teardown(self: TransactionTestCase) -> None:
        # a test that asks for serialized rollback or a subset of apps keeps Django's own way
        if self.serialized_rollback or self.available_apps is not None:
            full_flush(self)
            return
        aliases = list(self._databases_names(include_mirrors=False))
        if all(tables_clear(connections[alias]) for alias in aliases):
            return
        full_flush(self)
        for alias in aliases:
            flushed(connections[alias])

    fixture_teardown.fast = True  # type: ignore[attr-defined]
    TransactionTestCase._fixture_teardown = fixture_teardown  # type: ignore[method-assign]
