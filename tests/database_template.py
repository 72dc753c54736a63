"""One build of the test database per run, cloned for every process that needs one.

Building the test database runs every migration (Django's state rendering dominates: about 20 s of CPU
on a quiet machine). ``./scripts/test.sh`` runs two pytest-xdist workers and then a process of its own,
each on its own database: on a fresh clone (CI) that was three builds. Now the first process that needs
a database builds it, under a PostgreSQL advisory lock, and leaves a copy as the template
(``test_reasoningbank_template``); the others wait for the lock and clone it (``CREATE DATABASE ...
TEMPLATE``, a second). The template carries the migrations' fingerprint (tests/schema_fingerprint.py):
one built from other migrations is never cloned.

Used by ``django_db_createdb`` and ``django_db_setup`` in tests/conftest.py.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

from tests.schema_fingerprint import template_name, template_state, template_store

# the connection holding the lock while this process builds the database the template is copied from
_builder: Any = None
# pytest-xdist's id of this run (the same in every worker); a run of one process has its own
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


def _server(connection: Any) -> Any:
    """A connection of our own to the server's maintenance database (CREATE DATABASE runs outside a
    transaction; an advisory lock lives as long as the session)."""
    import psycopg

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**{**params, "dbname": "postgres"}, autocommit=True)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def database_clone_or_lock(connection: Any, name: str, fingerprint: str, *, rebuild: bool) -> bool:
    """Clone test database ``name`` from the template when one of these migrations is there (and, with
    ``rebuild``, was built by this run): True. Otherwise False, holding the lock until
    ``template_from_database`` has made the template from the database this process now builds."""
    global _builder
    template = template_name(name)
    server = _server(connection)
    # waits while another process builds the template (or clones it)
    server.execute("SELECT pg_advisory_lock(hashtext(%s))", [template])
    state = template_state(server.cursor(), template)
    if state is None or state[0] != fingerprint or (rebuild and state[1] != RUN_ID):
        _builder = server
        return False
    try:
        server.execute(f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)")
        server.execute(f"CREATE DATABASE {_quoted(name)} TEMPLATE {_quoted(template)}")
    finally:
        server.close()  # the lock goes with the session
    sys.stderr.write(f"\n{name}: cloned from {template}\n")
    return True


def template_from_database(connection: Any, name: str, fingerprint: str) -> None:
    """After this process built ``name`` (database_clone_or_lock said so): the template as a copy of
    it, then the lock released. Nothing to do in a process that cloned its database."""
    global _builder
    if _builder is None:
        return
    from django.db import connections

    server, _builder = _builder, None
    template = template_name(name)
    connections.close_all()  # the source of a copy may have no other session
    try:
        server.execute(f"DROP DATABASE IF EXISTS {_quoted(template)} WITH (FORCE)")
        server.execute(f"CREATE DATABASE {_quoted(template)} TEMPLATE {_quoted(name)}")
        template_store(server.cursor(), _quoted(template), fingerprint, RUN_ID)
    finally:
        server.close()
