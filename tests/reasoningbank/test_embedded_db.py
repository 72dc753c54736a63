"""The embedded server's own parameters (reasoningbank/embedded_db.py)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from reasoningbank.embedded_db import server_conf_write, shared_buffers_validate


def test_parameters_are_written_to_our_file_and_included_once(tmp_path):
    (tmp_path / "postgresql.conf").write_text("max_connections = 100\n")
    assert server_conf_write(tmp_path, {"shared_buffers": "1GB"})
    assert server_conf_write(tmp_path, {"shared_buffers": "512MB"})
    main = (tmp_path / "postgresql.conf").read_text()
    assert main.startswith("max_connections = 100\n")
    assert main.count("include_if_exists = 'reasoningbank.conf'") == 1
    assert (tmp_path / "reasoningbank.conf").read_text() == "shared_buffers = '512MB'\n"


def test_nothing_is_written_before_the_data_directory_is_initialised(tmp_path):
    assert not server_conf_write(tmp_path, {"shared_buffers": "1GB"})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1GB", "512MB", "131072", "64kB"])
def test_postgresql_sizes_are_accepted(value):
    assert shared_buffers_validate(value) == value


@pytest.mark.parametrize("value", ["", "1 GB", "lots", "1gb", "1GB'; DROP"])
def test_a_malformed_size_names_the_variable(value):
    with pytest.raises(ImproperlyConfigured, match="RB_PG_SHARED_BUFFERS"):
        shared_buffers_validate(value)


def test_processes_that_died_without_detaching_are_forgotten(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from reasoningbank.embedded_db import handles_prune

    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(finished.stdout)
    (tmp_path / ".handle_pids.json").write_text(json.dumps([os.getpid(), dead]))
    assert handles_prune(tmp_path) == [os.getpid()]
    assert json.loads((tmp_path / ".handle_pids.json").read_text()) == [os.getpid()]
    assert handles_prune(tmp_path / "missing") == []


def _fake_postmaster(data_dir) -> int:
    """A process standing in for the server (its pid first in postmaster.pid, as PostgreSQL writes it),
    not our child (a stopped child would linger as a zombie), that exits on SIGINT like the server."""
    import subprocess
    import sys
    import time

    ready = data_dir / "fake-ready"
    code = (
        "import pathlib, signal, sys, time; signal.signal(signal.SIGINT, lambda *_: sys.exit(0)); "
        f"pathlib.Path('{ready}').touch(); time.sleep(60)"
    )
    started = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -c "{code}" >/dev/null 2>&1 & echo $!'],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(started.stdout)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:  # its SIGINT handler is in place
        time.sleep(0.05)
    (data_dir / "postmaster.pid").write_text(f"{pid}\n{data_dir}\n1795457434\n5432\n")
    return pid


def _kill(pid: int) -> None:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_server_no_live_process_uses_is_stopped(tmp_path):
    import json

    from reasoningbank.embedded_db import server_stop_if_unused
    from reasoningbank.processes import process_exists

    pid = _fake_postmaster(tmp_path)
    (tmp_path / ".handle_pids.json").write_text(json.dumps([2**22 + 12345]))  # a killed web: gone
    try:
        message = server_stop_if_unused(tmp_path, wait_seconds=10)
    finally:
        _kill(pid)
    assert message == f"embedded PostgreSQL in {tmp_path} (pid {pid}) stopped"
    assert not process_exists(pid)
    assert json.loads((tmp_path / ".handle_pids.json").read_text()) == []


def test_a_server_still_in_use_is_left_running(tmp_path):
    import json
    import os

    from reasoningbank.embedded_db import server_stop_if_unused
    from reasoningbank.processes import process_exists

    pid = _fake_postmaster(tmp_path)
    (tmp_path / ".handle_pids.json").write_text(json.dumps([os.getpid()]))
    try:
        assert "left running: still used by pid" in server_stop_if_unused(tmp_path)
        assert process_exists(pid)
    finally:
        _kill(pid)


def test_stopping_a_server_that_is_not_running_says_so(tmp_path):
    from reasoningbank.embedded_db import server_stop_if_unused

    assert server_stop_if_unused(tmp_path) == f"embedded PostgreSQL in {tmp_path} is not running"


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["manage.py", "migrate", "--noinput"], True),  # run.sh's first step makes the cluster
        (["/repo/manage.py", "migrate"], True),
        (["manage.py", "create_org", "acme"], False),  # a command elsewhere says so instead
        (["manage.py", "qcluster"], False),
        (["manage.py"], False),
        (["/repo/.venv/bin/uvicorn", "reasoningbank.asgi:application"], True),
        (["/repo/.venv/bin/pytest", "tests"], True),
        (["bench/search.py"], True),
    ],
)
def test_only_migrate_and_processes_that_are_not_commands_may_create_the_cluster(argv, allowed):
    from reasoningbank.embedded_db import cluster_creation_allowed

    assert cluster_creation_allowed(argv) is allowed


def test_a_fresh_data_directory_is_created_and_serves_with_our_parameters(tmp_path):
    """run.sh starts the server before anything attaches: initdb, then our shared_buffers at once (not from
    the second start on), left running for web and worker."""
    import os
    import subprocess
    import sys

    import psycopg

    data_dir = tmp_path / "pg"
    env = {**os.environ, "RB_PG_SHARED_BUFFERS": "48MB"}
    started = subprocess.run(
        [sys.executable, "-m", "reasoningbank.embedded_db", "start", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    try:
        assert started.returncode == 0, started.stderr
        assert "created and started" in started.stdout
        lines = (data_dir / "postmaster.pid").read_text().splitlines()  # running after the helper exited
        with psycopg.connect(host=lines[4], port=int(lines[3]), user="postgres", dbname="postgres") as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("48MB",)
    finally:
        subprocess.run(
            [sys.executable, "-m", "reasoningbank.embedded_db", "stop", str(data_dir)],
            capture_output=True,
            timeout=60,
        )
