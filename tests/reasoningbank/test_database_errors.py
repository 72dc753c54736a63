"""Every command of ours, run against a data directory without a database or a database without
tables, says so in one line with the fix: never a traceback, and never a second, empty cluster made
behind the user's back (docs/commands.md#the-wrong-data-directory).

The commands run as a person runs them: ``manage.py`` in a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.core.management import get_commands

from tests.repo_files import first_party_apps

BASE_DIR = Path(__file__).resolve().parents[2]
OUR_APPS = first_party_apps()
# arguments that get each command past its argument parsing to its first query
ARGUMENTS = {
    "create_org": ["initech"],
    "create_project": ["acme", "web-app"],
    "create_token": ["acme", "--label", "laptop"],
    "export_memories": ["acme"],
    "import_memories": ["acme", "{bank}"],
    "memories_seed_from_git": ["--org", "acme", "--log", "{bank}", "--repository", "github.com/acme/api", "--status"],
    "promote_institutional": ["--org", "acme", "--dry-run"],
    "reembed_memories": [],
    "repair_summaries": [],
    "requeue_sessions": [],
    "rollup_signals": [],
    "set_plan": ["acme", "pro"],
    "setup_schedules": [],
}


def command_run(name: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bank = tmp_path / "bank.jsonl"
    bank.write_text("")
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "RB_DATA_DIR", "RB_TESTING", "SECRET_KEY", "DEBUG")
    }
    environment.update(env)
    argv = [arg.replace("{bank}", str(bank)) for arg in ARGUMENTS.get(name, [])]
    return subprocess.run(
        [sys.executable, "manage.py", name, *argv],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )


def said_in_one_line(finished: subprocess.CompletedProcess[str]) -> str:
    assert finished.returncode == 1, (finished.stdout, finished.stderr)
    assert "Traceback" not in finished.stderr
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, finished.stderr
    return lines[0]


@pytest.fixture
def empty_database(db) -> Iterator[str]:
    """A database with no tables on the tests' own server, as DATABASE_URL."""
    name = f"rb_empty_{os.getpid()}"
    params = settings.DATABASES["default"]
    admin = {"host": params["HOST"], "port": params["PORT"] or None, "user": params["USER"], "dbname": "postgres"}
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://{params['USER']}@{quote(params['HOST'], safe='')}/{name}"
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# run.sh's start-up step migrates a database without tables, like Django's migrate; in a data directory
# without a cluster it says so like the others (run.sh creates the cluster before it)
START_UP = {"prepare_service"}
# commands that never open the database: llm_check talks to the LLM provider only (its calls are the
# operator's, metered to no organization)
NO_DATABASE = {"llm_check"}


def test_the_table_below_names_every_command_of_ours():
    ours = {name for name, app in get_commands().items() if app.split(".")[0] in OUR_APPS}
    assert ours - START_UP - NO_DATABASE == set(ARGUMENTS)


@pytest.mark.parametrize("name", sorted(NO_DATABASE))
def test_a_command_that_needs_no_database_runs_in_a_data_directory_without_one_and_creates_none(name, tmp_path):
    data_dir = tmp_path / "data"
    finished = command_run(name, tmp_path, RB_DATA_DIR=str(data_dir), LLM_PROVIDER="none")
    assert "Traceback" not in finished.stderr and "There is no database" not in finished.stderr
    assert "No LLM is configured" in finished.stderr
    assert not (data_dir / "pg" / "PG_VERSION").exists()


def test_the_start_up_step_in_a_data_directory_without_a_database_says_so_and_creates_none(tmp_path):
    data_dir = tmp_path / "data"
    line = said_in_one_line(command_run("prepare_service", tmp_path, RB_DATA_DIR=str(data_dir)))
    assert line.startswith(f"There is no database in {data_dir} yet")
    assert not (data_dir / "pg" / "PG_VERSION").exists()


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_a_command_in_a_data_directory_without_a_database_says_so_and_creates_none(name, tmp_path):
    data_dir = tmp_path / "data"
    line = said_in_one_line(command_run(name, tmp_path, RB_DATA_DIR=str(data_dir)))
    assert line == (
        f"There is no database in {data_dir} yet: start the service once with ./scripts/run.sh, "
        "or set RB_DATA_DIR to the data directory the server uses."
    )
    assert not (data_dir / "pg" / "PG_VERSION").exists()


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_a_command_against_a_database_without_tables_says_so(name, tmp_path, empty_database):
    line = said_in_one_line(command_run(name, tmp_path, DATABASE_URL=empty_database, SECRET_KEY="s" * 50))
    assert line.startswith(f"The database rb_empty_{os.getpid()} on ")
    assert line.endswith(
        "has no tables yet: run `.venv/bin/python manage.py migrate` (./scripts/run.sh does at every start), "
        "or point DATABASE_URL at the database the server uses."
    )


def test_a_database_whose_migrations_are_behind_names_the_missing_table(tmp_path, empty_database):
    name = empty_database.rsplit("/", 1)[1]
    params = settings.DATABASES["default"]
    with psycopg.connect(host=params["HOST"], user=params["USER"], dbname=name, autocommit=True) as conn:
        conn.execute("CREATE TABLE django_migrations (id serial PRIMARY KEY, app text, name text, applied timestamptz)")
    line = said_in_one_line(command_run("create_org", tmp_path, DATABASE_URL=empty_database, SECRET_KEY="s" * 50))
    assert 'relation "accounts_organization" does not exist' in line
    assert line.endswith(
        "its migrations are not all applied; run `.venv/bin/python manage.py migrate` "
        "(./scripts/run.sh does at every start)."
    )


def test_a_cluster_without_tables_in_the_data_directory_is_named_with_the_fix(tmp_path):
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RB_TESTING", "SECRET_KEY", "DEBUG")}
    env["RB_DATA_DIR"] = str(data_dir)
    # a cluster as a process other than a command makes one (the web, a bench script), never migrated
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.db import connection; connection.ensure_connection()",
        ],
        cwd=BASE_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": "reasoningbank.settings"},
        check=True,
        timeout=300,
        capture_output=True,
    )
    try:
        line = said_in_one_line(command_run("create_org", tmp_path, RB_DATA_DIR=str(data_dir)))
    finally:
        subprocess.run(
            [sys.executable, "-m", "reasoningbank.embedded_db", "stop", str(data_dir / "pg")],
            cwd=BASE_DIR,
            env=env,
            timeout=60,
            capture_output=True,
        )
    assert line == (
        f"The database in {data_dir} has no tables yet: start the service once with ./scripts/run.sh, "
        "or set RB_DATA_DIR to the data directory the server uses."
    )
