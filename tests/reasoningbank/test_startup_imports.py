"""Django's set-up, which every ``manage.py`` command pays before it does anything, imports no LLM
SDK, no embedding model, no numpy and no MCP SDK, and loading the URLs (``check``, every ``reverse``)
imports no SDK either: they load where they are used (docs/commands.md#start-up).

Each probe is a fresh interpreter (this test process has imported everything long ago), set up with a
``DATABASE_URL`` that is never connected to: set-up must not need the database either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repo_files import first_party_apps

BASE_DIR = Path(__file__).resolve().parents[2]
OUR_APPS = first_party_apps()
PROBE = """
import json, sys
import django
django.setup()
print(json.dumps([name for name in json.loads(sys.argv[1]) if name in sys.modules]))
"""
# heavy, and needed only by the code that calls a provider, embeds text or clusters vectors
NOT_AT_SETUP = [
    "anthropic",
    "openai",
    "sentence_transformers",
    "torch",
    "numpy",
    "reasoningbank.ai.minilm",
    "reasoningbank.ai.minilm_onnx",
    "onnx",
    "onnxruntime",
    "mcp",
]


def modules_after_setup(*, with_urls: bool = False) -> list[str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("RB_", "DB_"))}
    environment.update(
        DJANGO_SETTINGS_MODULE="reasoningbank.settings",
        # a server nobody listens on: set-up must not connect
        DATABASE_URL="postgres://nobody@127.0.0.1:9/nothing",
        SECRET_KEY="s" * 50,
        DEBUG="0",
    )
    environment.pop("RB_TESTING", None)
    probe = PROBE if not with_urls else PROBE.replace("django.setup()", "django.setup(); import reasoningbank.urls")
    finished = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(NOT_AT_SETUP)],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    return list(json.loads(finished.stdout.strip().splitlines()[-1]))


def test_django_setup_imports_no_llm_sdk_no_embedding_model_no_numpy_and_no_mcp_sdk():
    assert modules_after_setup() == []


@pytest.mark.parametrize("sdk", ["anthropic", "openai", "mcp"])
def test_loading_the_url_configuration_as_check_and_reverse_do_imports_no_llm_or_mcp_sdk(sdk):
    assert sdk not in modules_after_setup(with_urls=True)


def test_our_commands_leave_the_system_checks_to_migrate_and_check():
    """Django runs its system checks before a command unless told not to, and they load every URL and
    view: half of a create_* command's time. ``prepare_service`` (run.sh's start-up step, once per start
    of the service), ``migrate`` and ``check`` still run them."""
    from django.core.management import get_commands, load_command_class

    ours = {name: app for name, app in get_commands().items() if app.split(".")[0] in OUR_APPS}
    assert len(ours) >= 10
    assert load_command_class(ours.pop("prepare_service"), "prepare_service").requires_system_checks == "__all__"
    for name, app in ours.items():
        assert load_command_class(app, name).requires_system_checks == [], name
