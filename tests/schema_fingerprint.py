"""Which migrations a reused test database was built from.

The suite keeps its test database between runs (``--reuse-db``): building it takes a minute of
migrations. Django's ``keepdb`` then applies the migrations that are new by name, but not one edited
after it was applied, nor does it undo one that is gone (another branch checked out): the tests would
run against a schema that the code on disk does not make. So the database carries, as its comment, a
fingerprint of every migration file it was built from, and a run whose files differ builds it anew
(tests/conftest.py, ``django_db_createdb``)."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path
from typing import Any

_COMMENT = re.compile(r"^migrations sha256:([0-9a-f]{64})$")


def migration_dirs() -> list[Path]:
    """The migration package of every installed app (Django's own and the libraries' included: an
    upgrade that brings a migration changes the schema too)."""
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    dirs: list[Path] = []
    for app_config in apps.get_app_configs():
        module_name, _ = MigrationLoader.migrations_module(app_config.label)
        spec = importlib.util.find_spec(module_name) if module_name else None
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(Path(location) for location in spec.submodule_search_locations)
    return sorted(set(dirs))


def migrations_fingerprint(dirs: list[Path]) -> str:
    """One hash of the names and contents of the migration modules in ``dirs`` (bytecode and other
    files ignored)."""
    digest = hashlib.sha256()
    for directory in sorted(dirs):
        for path in sorted(directory.glob("*.py")):
            digest.update(f"{directory.parent.name}/{directory.name}/{path.name}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def database_fingerprint(cursor: Any, name: str) -> str | None:
    """The fingerprint database ``name`` was built from; None when it has none or does not exist.
    Read from the catalogue, so any connection to the server will do."""
    cursor.execute(
        "SELECT pg_catalog.shobj_description(oid, 'pg_database') FROM pg_catalog.pg_database WHERE datname = %s",
        [name],
    )
    row = cursor.fetchone()
    match = _COMMENT.match(row[0] or "") if row else None
    return match.group(1) if match else None


def reused_database_stale(cursor: Any, name: str, fingerprint: str) -> bool:
    """Whether database ``name`` exists and was built from other migrations than ``fingerprint``'s (or
    from unknown ones: built before this check, or its set-up interrupted)."""
    cursor.execute("SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s", [name])
    if cursor.fetchone() is None:
        return False  # nothing to reuse: Django creates it
    return database_fingerprint(cursor, name) != fingerprint


def database_fingerprint_store(cursor: Any, quoted_name: str, fingerprint: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{64}", fingerprint):  # inlined below: COMMENT takes no parameters
        raise ValueError(f"not a sha256 fingerprint: {fingerprint!r}")
    cursor.execute(f"COMMENT ON DATABASE {quoted_name} IS 'migrations sha256:{fingerprint}'")


# The template every test database of a run is cloned from (tests/conftest.py): the workers' and the serial
# process's databases are copies of one build, not three builds of their own. Its comment carries the
# fingerprint and the run that built it ("run <uid>", pytest-xdist's test run id), so that ``--create-db``
# rebuilds it once per run, not once per worker.
_TEMPLATE_COMMENT = re.compile(r"^migrations sha256:([0-9a-f]{64}) run (\S+)$")


def template_name(test_database: str) -> str:
    """``test_reasoningbank_gw1`` → ``test_reasoningbank_template``: one template for the workers' databases."""
    return re.sub(r"_gw\d+$", "", test_database) + "_template"


def template_state(cursor: Any, name: str) -> tuple[str, str] | None:
    """(fingerprint, run id) of template ``name``; None when it is absent or its build was not finished."""
    cursor.execute(
        "SELECT pg_catalog.shobj_description(oid, 'pg_database') FROM pg_catalog.pg_database WHERE datname = %s",
        [name],
    )
    row = cursor.fetchone()
    match = _TEMPLATE_COMMENT.match(row[0] or "") if row else None
    return (match.group(1), match.group(2)) if match else None


def template_store(cursor: Any, quoted_name: str, fingerprint: str, run_id: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{64}", fingerprint) or not re.fullmatch(r"[\w-]+", run_id):
        raise ValueError(f"not a fingerprint and a run id: {fingerprint!r} {run_id!r}")
    cursor.execute(f"COMMENT ON DATABASE {quoted_name} IS 'migrations sha256:{fingerprint} run {run_id}'")
