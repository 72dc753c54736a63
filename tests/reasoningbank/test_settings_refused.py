"""A setting the service refuses (``LLM_PROVIDER=claude``) stops every entry point with one line that names
the valid values: each ``manage.py`` command, and the ASGI app as uvicorn imports it at the service's start
(``scripts/run.sh``). Never the traceback through the settings modules (docs/configuration.md).

The processes run as a person starts them: a fresh interpreter with the environment given.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands

from tests.repo_files import first_party_apps

BASE_DIR = Path(__file__).resolve().parents[2]
OUR_APPS = first_party_apps()
# Django's and django-q2's commands a newcomer types: the settings are refused before any of them runs
THEIRS = ["createsuperuser", "migrate", "qcluster", "check"]


def started(argv: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "RB_DATA_DIR", "RB_TESTING", "SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")
    }
    environment.update(RB_DATA_DIR=str(tmp_path / "data"), **env)
    return subprocess.run(argv, cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=120)


def one_line(finished: subprocess.CompletedProcess[str]) -> str:
    assert finished.returncode != 0, (finished.stdout, finished.stderr)
    assert "Traceback" not in finished.stderr, finished.stderr
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, finished.stderr
    return lines[0]


def our_commands() -> list[str]:
    return sorted(name for name, app in get_commands().items() if app.split(".")[0] in OUR_APPS)


@pytest.mark.parametrize("name", [*our_commands(), *THEIRS])
def test_an_unknown_llm_provider_stops_every_command_with_one_line_listing_the_valid_ones(name, tmp_path):
    line = one_line(started([sys.executable, "manage.py", name], tmp_path, LLM_PROVIDER="claude"))

    assert "LLM_PROVIDER must be one of none, anthropic, openai; got 'claude'" in line
    assert "docs/configuration.md" in line


def test_the_service_start_up_says_it_in_one_line_too(tmp_path):
    """What run.sh starts as web: uvicorn importing the ASGI app (on a free port, in case it started)."""
    uvicorn = str(Path(sys.executable).parent / "uvicorn")

    finished = started([uvicorn, "reasoningbank.asgi:application", "--port", "0"], tmp_path, LLM_PROVIDER="claude")

    assert "LLM_PROVIDER must be one of none, anthropic, openai; got 'claude'" in one_line(finished)


def test_any_refused_setting_is_one_line_naming_the_variable(tmp_path):
    line = one_line(started([sys.executable, "manage.py", "llm_check"], tmp_path, SEARCH_STATS_TTL="five minutes"))

    assert line == (
        "Configuration error: SEARCH_STATS_TTL must be an integer, got 'five minutes' "
        "(every setting: docs/configuration.md)"
    )


def test_the_check_reads_its_own_settings_when_they_are_valid(tmp_path):
    """The early load changes nothing for a good configuration: the command runs as before."""
    finished = started([sys.executable, "manage.py", "llm_check"], tmp_path, LLM_PROVIDER="none")

    assert finished.returncode == 2 and "No LLM is configured" in finished.stderr
