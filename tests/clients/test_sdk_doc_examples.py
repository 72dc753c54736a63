"""The code examples of docs/sdks.md type-check as written (``mypy --strict`` for the Python ones,
``tsc --strict`` against the committed TypeScript build for the others), so an example that calls a
method or reads a field the clients do not have fails here, without a service. tests/e2e/test_sdks.py runs
the same examples against the live service."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.clients.doc_examples import module_name, sdk_examples, tsc, typescript_workspace
from tests.clients.drift import PYTHON_CLIENT, node_missing


def test_the_page_shows_both_clients_with_the_export_s_admin_token():
    python, typescript = sdk_examples("python"), sdk_examples("typescript")
    assert len(python) >= 4 and len(typescript) >= 3
    for blocks in (python, typescript):
        exports = [block for block in blocks if ".export(" in block.code]
        assert exports and all("rb_admin_…" in block.code for block in exports), "the export needs an admin token"


def test_the_python_examples_type_check_under_mypy_strict(tmp_path):
    for block in sdk_examples("python"):
        (tmp_path / f"{module_name(block)}.py").write_text(block.code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "/dev/null", "--no-incremental", str(tmp_path)],
        env={**os.environ, "MYPYPATH": str(PYTHON_CLIENT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_typescript_examples_type_check_under_tsc_strict(tmp_path):
    if node_missing():
        pytest.skip("node is not installed: the TypeScript examples' check needs it (docs/sdks.md)")
    files = typescript_workspace(tmp_path, sdk_examples("typescript"))
    result = tsc(tmp_path, files, emit=False)
    assert result.returncode == 0, result.stdout + result.stderr
