"""Session settings the service needs on every database connection, stored where a transaction pooler
cannot lose them (docs/operations.md#pgbouncer-in-transaction-pooling).

Without a pooler each connection asks for them at its start (libpq's ``options``, in
``reasoningbank/settings/database.py``). PgBouncer refuses startup options, and a ``SET`` would stay on
one server connection and miss the next transaction's; so with ``DATABASE_POOLER=transaction`` they
become defaults of the service's role in its database (``ALTER ROLE ... IN DATABASE ... SET``), which
PostgreSQL applies to every new server connection. A role may set its own defaults: no superuser needed.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction


def session_defaults_store() -> dict[str, str]:
    """Store ``DATABASE_SESSION_SETTINGS`` as the current role's defaults in the current database;
    returns them. Connections already open keep what they started with (docs/operations.md)."""
    wanted: dict[str, str] = dict(settings.DATABASE_SESSION_SETTINGS)
    with transaction.atomic(), connection.cursor() as cursor:
        # pgvector defines its hnsw.* settings when its library loads: loaded, they are checked (a typo
        # is an error here, not a silent placeholder) and a role that is no superuser may store them
        cursor.execute("SELECT '[1]'::vector")
        cursor.execute("SELECT quote_ident(current_user), quote_ident(current_database())")
        role, database = cursor.fetchone()
        for name, value in wanted.items():
            # ALTER ROLE takes no bind parameters; the names are ours, the value is quoted by PostgreSQL
            cursor.execute("SELECT quote_literal(%s)", [value])
            (literal,) = cursor.fetchone()
            cursor.execute(f"ALTER ROLE {role} IN DATABASE {database} SET {name} = {literal}")
    return wanted


def session_defaults_stored() -> dict[str, str]:
    """The current role's stored defaults in the current database (``name → value``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT unnest(s.setconfig) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase "
            "WHERE d.datname = current_database() AND s.setrole = to_regrole(quote_ident(current_user))"
        )
        pairs = [row[0].split("=", 1) for row in cursor.fetchall()]
    return {name: value for name, value in pairs}
