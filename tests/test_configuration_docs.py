"""docs/configuration.md has one row for every environment variable the settings read, so a new
setting cannot ship undocumented and a removed one cannot linger."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "configuration.md"

# the variables the settings read, found by importing them in a fresh interpreter with a recording
# os.environ: a reader added anywhere in reasoningbank/settings (or in a helper it calls) is seen,
# whatever its spelling. Only reads made from the project's own files count: libraries that look at
# TMPDIR or PSUTIL_DEBUG while being imported are not ours to document.
_RECORD = r"""
import inspect, json, os, sys
repo = sys.argv[1]
seen = set()

def ours():
    frame = inspect.currentframe().f_back.f_back  # ours() <- the reading method <- its caller
    path = frame.f_code.co_filename
    return path.startswith(repo) and "/.venv/" not in path

class Recording(dict):
    def get(self, key, default=None):
        if ours():
            seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        if ours():
            seen.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        if ours():
            seen.add(key)
        return super().__contains__(key)

os.environ = Recording(os.environ)
os.environ["DEBUG"] = "1"  # no SECRET_KEY needed
import reasoningbank.settings  # noqa: E402,F401
print(json.dumps(sorted(seen)))
"""
# set for the test process itself, never by a user
_INTERNAL = {"RB_TESTING"}


def _settings_read() -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _RECORD, str(REPO)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    return set(json.loads(done.stdout.splitlines()[-1])) - _INTERNAL


def _rows() -> set[str]:
    """The variable of each table row: the first column's code span."""
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", PAGE.read_text(), re.MULTILINE))


def test_every_environment_variable_the_settings_read_has_a_row() -> None:
    missing = _settings_read() - _rows()
    assert not missing, f"add a row to docs/configuration.md for: {sorted(missing)}"


def test_a_row_is_one_setting() -> None:
    joined = re.findall(r"^\| `[A-Z][A-Z0-9_]+`, ", PAGE.read_text(), re.MULTILINE)
    assert not joined, f"one setting per row: {joined}"


def test_the_settings_reader_sees_a_variable_read_with_a_default() -> None:
    # the recording itself works: these are read with a default and never set in the test's environment
    assert {"LLM_PROVIDER", "SEARCH_LEXICAL_WEIGHT", "CONSOLIDATION_LADDER_RETRY_DELAY"} <= _settings_read()
