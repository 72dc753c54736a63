"""A kept test database is rebuilt when the migrations on disk are not those it was built from
(tests/schema_fingerprint.py, the ``django_db_createdb`` fixture of tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.apps import apps
from django.db import connection

from tests.schema_fingerprint import (
    database_fingerprint,
    migration_dirs,
    migrations_fingerprint,
    reused_database_stale,
    template_name,
    template_state,
    template_store,
)

REPO = Path(__file__).resolve().parents[1]


def _migrations(root: Path, files: dict[str, str]) -> Path:
    directory = root / "app" / "migrations"
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_a_new_an_edited_or_a_removed_migration_changes_the_fingerprint(tmp_path: Path) -> None:
    directory = _migrations(tmp_path, {"__init__.py": "", "0001_initial.py": "operations = []\n"})
    before = migrations_fingerprint([directory])
    assert migrations_fingerprint([directory]) == before  # the same files, the same fingerprint

    (directory / "0002_more.py").write_text("operations = ['add a column']\n")
    added = migrations_fingerprint([directory])
    (directory / "0002_more.py").write_text("operations = ['add another column']\n")
    edited = migrations_fingerprint([directory])
    (directory / "0002_more.py").unlink()
    assert len({before, added, edited}) == 3
    assert migrations_fingerprint([directory]) == before


def test_bytecode_and_other_files_beside_the_migrations_do_not_change_it(tmp_path: Path) -> None:
    directory = _migrations(tmp_path, {"__init__.py": "", "0001_initial.py": "operations = []\n"})
    before = migrations_fingerprint([directory])
    (directory / "__pycache__").mkdir()
    (directory / "__pycache__" / "0001_initial.cpython-311.pyc").write_bytes(b"\x00")
    (directory / "notes.txt").write_text("a note")
    assert migrations_fingerprint([directory]) == before


def test_every_app_with_migrations_is_fingerprinted() -> None:
    dirs = set(migration_dirs())
    with_migrations = {Path(app.path) / "migrations" for app in apps.get_app_configs()}
    expected = {path for path in with_migrations if (path / "__init__.py").exists()}
    assert {"accounts", "memories", "consolidation", "django_q"} <= {path.parent.name for path in expected}
    assert expected <= dirs


def test_the_test_database_carries_the_fingerprint_of_the_migrations_on_disk(db: Any) -> None:
    with connection.cursor() as cursor:
        stored = database_fingerprint(cursor, connection.settings_dict["NAME"])
    assert stored == migrations_fingerprint(migration_dirs())


def test_only_a_database_built_from_other_migrations_is_stale(db: Any) -> None:
    current = migrations_fingerprint(migration_dirs())
    with connection.cursor() as cursor:
        this_one = connection.settings_dict["NAME"]
        assert not reused_database_stale(cursor, this_one, current)
        assert reused_database_stale(cursor, this_one, "0" * 64)
        assert reused_database_stale(cursor, "postgres", current)  # no fingerprint: built by whom?
        assert not reused_database_stale(cursor, f"absent_{uuid.uuid4().hex}", current)  # nothing to reuse


def _server() -> psycopg.Connection[Any]:
    """A connection of our own to the server's maintenance database (CREATE and DROP DATABASE run
    outside a transaction)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**{**params, "dbname": "postgres"}, autocommit=True)


DECISION_TEST = """
def test_the_decision(django_db_createdb):
    print(f"django_db_createdb={django_db_createdb}")
"""


@pytest.mark.parametrize(("stored", "rebuilt"), [("current", False), ("other", True)])
def test_a_run_builds_the_kept_database_anew_only_when_its_migrations_changed(
    db: Any, tmp_path: Path, stored: str, rebuilt: bool
) -> None:
    """A fresh pytest (the suite's configuration and conftest) asks pytest-django's
    ``django_db_createdb`` whether to build its kept database anew; that database here is an empty one
    carrying a fingerprint: the current one, or one of other migrations (a branch switched, a migration
    edited). Only the decision runs: nothing is built."""
    suffix = f"fingerprint_{uuid.uuid4().hex[:12]}"
    name = f"test_{suffix}"
    fingerprint = migrations_fingerprint(migration_dirs()) if stored == "current" else "0" * 64
    (tmp_path / "test_decision.py").write_text(DECISION_TEST)
    env = {**os.environ, "RB_TEST_DB_NAME": suffix}
    command = [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO)]
    command += ["-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "-s", str(tmp_path / "test_decision.py")]
    with _server() as server:
        server.execute(f"CREATE DATABASE {name}")
    try:
        with _server() as server:
            server.execute(f"COMMENT ON DATABASE {name} IS 'migrations sha256:{fingerprint}'")
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"django_db_createdb={rebuilt}" in result.stdout
    finally:
        with _server() as server:
            server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_the_workers_and_the_serial_process_share_one_template() -> None:
    names = {template_name(name) for name in ("test_reasoningbank", "test_reasoningbank_gw0", "test_reasoningbank_gw11")}
    assert names == {"test_reasoningbank_template"}


@pytest.mark.parametrize(("stored", "cloned"), [("current", True), ("other", False)])
def test_a_run_without_its_database_clones_the_template_only_of_the_migrations_on_disk(
    db: Any, tmp_path: Path, stored: str, cloned: bool
) -> None:
    """A fresh pytest whose database is not there finds a template (tests/database_template.py): one of
    the migrations on disk is copied (no build: ``django_db_createdb`` is False, the database exists);
    one of other migrations is not (a build). An empty template here: only the decision runs."""
    suffix = f"template_{uuid.uuid4().hex[:12]}"
    name, template = f"test_{suffix}", template_name(f"test_{suffix}")
    fingerprint = migrations_fingerprint(migration_dirs()) if stored == "current" else "0" * 64
    (tmp_path / "test_decision.py").write_text(DECISION_TEST)
    env = {**os.environ, "RB_TEST_DB_NAME": suffix}
    command = [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO)]
    command += ["-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "-s", str(tmp_path / "test_decision.py")]
    with _server() as server:
        server.execute(f"CREATE DATABASE {template}")
        template_store(server.cursor(), template, fingerprint, "an-earlier-run")
        assert template_state(server.cursor(), template) == (fingerprint, "an-earlier-run")
    try:
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"django_db_createdb={not cloned}" in result.stdout
        with _server() as server:
            exists = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        assert exists == cloned
    finally:
        with _server() as server:
            for database in (name, template):
                server.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
