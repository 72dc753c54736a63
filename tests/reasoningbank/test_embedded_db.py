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
