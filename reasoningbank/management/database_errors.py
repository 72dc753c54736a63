"""What a ``manage.py`` command says when the database it reached cannot serve it: no cluster in
``RB_DATA_DIR``, a database without tables (the wrong data directory, or a service never started), a
database whose migrations are behind, a server it cannot connect to. One line with the fix instead of
a traceback (docs/commands.md#the-wrong-data-directory).
"""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError, connection

RUN_ONCE = "start the service once with ./scripts/run.sh, or set RB_DATA_DIR to the data directory the server uses"
MIGRATE = ".venv/bin/python manage.py migrate"


def database_error_explain(exc: BaseException) -> str | None:
    """One line saying what is wrong with the database and how to fix it; None for any other error
    (a real failure keeps its traceback)."""
    import psycopg
    import psycopg.errors

    if not isinstance(exc, DatabaseError):
        return None
    if settings.EMBEDDED_DATABASE_ABSENT:
        return f"There is no database in {settings.DATA_DIR} yet: {RUN_ONCE}."
    cause = exc.__cause__
    if isinstance(cause, psycopg.errors.UndefinedTable):
        if not database_has_migrations():
            if settings.DATABASE_URL:
                return (
                    f"The database {database_where()} has no tables yet: run `{MIGRATE}` (./scripts/run.sh "
                    "does at every start), or point DATABASE_URL at the database the server uses."
                )
            return f"The database in {settings.DATA_DIR} has no tables yet: {RUN_ONCE}."
        return (
            f"The database {database_where()} lacks a table ({first_line(cause)}): its migrations are not all "
            f"applied; run `{MIGRATE}` (./scripts/run.sh does at every start)."
        )
    # psycopg raises its base OperationalError itself (not a server error's subclass) when it cannot
    # connect; the pool's timeout, waiting for a first connection, is a subclass of its own
    from psycopg_pool import PoolTimeout

    if type(cause) is psycopg.OperationalError or isinstance(cause, PoolTimeout):
        return f"Cannot connect to the database {database_where()}: {first_line(cause)}"
    return None


def database_has_migrations() -> bool:
    """Whether ``migrate`` ever ran on this database (on a fresh connection: the failed one may be in
    an aborted transaction)."""
    try:
        connection.close()
        return "django_migrations" in connection.introspection.table_names()
    except DatabaseError:
        return False


def database_where() -> str:
    """The database, as a person would recognise it: the data directory, or DATABASE_URL's name and host."""
    if not settings.DATABASE_URL:
        return f"in {settings.DATA_DIR}"
    db = settings.DATABASES["default"]
    return f"{db.get('NAME')} on {db.get('HOST') or 'localhost'}"


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
