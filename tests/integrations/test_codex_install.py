"""The Codex CLI install script (integrations/codex/install.py), run as a user runs it, on a Codex home
that already has a config.toml and a hooks.json of its own: a merge that keeps every other table, key
and comment, one ``[features]`` table, the MCP url from ``REASONINGBANK_URL``, and nothing changed on a
second run. The results are read back with ``tomllib`` as Codex reads TOML (a table declared twice is
an error to both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "integrations" / "codex" / "install.py"
OUR_HOOKS = json.loads((REPO / "integrations" / "codex" / "hooks.json").read_text())["hooks"]

USER_CONFIG = """\
# my codex config
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[features]
# experimental things I like
web_search_request = true
unified_exec = false

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp",
  "--flag"]

[projects."/home/dev/shop"]
trust_level = "trusted"

[notice]
text = \"\"\"
[features]
a line that only looks like a table
\"\"\"
"""


def install(home: Path, *args: str, url: str = "https://rb.example.test/") -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home.parent), "REASONINGBANK_URL": url}
    return subprocess.run(
        [sys.executable, str(INSTALL), "--codex-home", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def toml(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


@pytest.fixture
def home(tmp_path: Path) -> Path:
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(USER_CONFIG)
    return codex_home


def test_a_config_with_its_own_features_table_keeps_one_with_hooks_added(home):
    before = toml(home / "config.toml")
    done = install(home)
    assert done.returncode == 0, done.stderr
    text = (home / "config.toml").read_text()
    after = toml(home / "config.toml")  # parses: no table is declared twice
    assert sum(line.strip() == "[features]" for line in text.splitlines()) == 2  # the table and the string's line
    assert after["features"] == {"web_search_request": True, "unified_exec": False, "hooks": True}
    assert after["mcp_servers"]["reasoningbank"] == {
        "url": "https://rb.example.test/mcp",
        "bearer_token_env_var": "REASONINGBANK_TOKEN",
    }
    # everything else as the user wrote it, comments too
    assert {key: value for key, value in after.items() if key not in ("features", "mcp_servers")} == {
        key: value for key, value in before.items() if key not in ("features", "mcp_servers")
    }
    assert after["mcp_servers"]["docs"] == before["mcp_servers"]["docs"]
    for comment in ("# my codex config", "# the default model", "# experimental things I like"):
        assert comment in text
    assert (home / "config.toml.before-reasoningbank").read_text() == USER_CONFIG


def test_a_second_run_changes_nothing(home):
    assert install(home).returncode == 0
    config, hooks = (home / "config.toml").read_bytes(), (home / "hooks.json").read_bytes()
    done = install(home)
    assert done.returncode == 0 and "nothing changed" in done.stdout
    assert (home / "config.toml").read_bytes() == config and (home / "hooks.json").read_bytes() == hooks


def test_an_existing_reasoningbank_entry_is_updated_in_place_with_its_comment(home):
    old = '[mcp_servers.reasoningbank]\nurl = "http://127.0.0.1:8000/mcp"  # pinned\nstartup_timeout_sec = 20\n'
    (home / "config.toml").write_text(USER_CONFIG + "\n" + old)
    assert install(home, url="http://10.0.0.5:9000").returncode == 0
    text = (home / "config.toml").read_text()
    assert 'url = "http://10.0.0.5:9000/mcp"  # pinned' in text
    assert text.count("[mcp_servers.reasoningbank]") == 1
    assert toml(home / "config.toml")["mcp_servers"]["reasoningbank"] == {
        "url": "http://10.0.0.5:9000/mcp",
        "startup_timeout_sec": 20,
        "bearer_token_env_var": "REASONINGBANK_TOKEN",
    }


def test_without_a_config_one_is_made_with_our_tables(tmp_path):
    home = tmp_path / ".codex"
    assert install(home).returncode == 0
    assert toml(home / "config.toml") == {
        "mcp_servers": {
            "reasoningbank": {"url": "https://rb.example.test/mcp", "bearer_token_env_var": "REASONINGBANK_TOKEN"}
        },
        "features": {"hooks": True},
    }
    assert json.loads((home / "hooks.json").read_text()) == {"hooks": OUR_HOOKS}


@pytest.mark.parametrize(
    ("config", "names"),
    [
        ("features = { hooks = false }\n", "[features] hooks = true"),  # an inline table cannot grow
        ('[mcp_servers]\nreasoningbank.command = "rb"\n', "[mcp_servers.reasoningbank] url"),  # dotted keys
    ],
)
def test_a_config_in_a_form_the_script_does_not_edit_is_left_as_it_was_with_what_to_set(home, config, names):
    (home / "config.toml").write_text(config)
    done = install(home)
    assert done.returncode == 1 and "nothing changed" in done.stderr and names in done.stderr
    assert (home / "config.toml").read_text() == config and not (home / "hooks.json").exists()


def test_a_config_that_is_not_toml_is_left_as_it_was(home):
    (home / "config.toml").write_text("[features]\nhooks = true\n[features]\n")  # what appending used to make
    done = install(home)
    assert done.returncode == 1 and "not valid TOML" in done.stderr
    assert (home / "config.toml").read_text() == "[features]\nhooks = true\n[features]\n"


def test_the_users_hooks_stay_and_ours_are_added_or_updated_in_their_place(home):
    theirs = {"type": "command", "command": "notify-send done"}
    old_capture = {"hooks": [{"type": "command", "command": OUR_HOOKS["Stop"][0]["hooks"][0]["command"], "timeout": 9}]}
    guard = {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
    (home / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [old_capture, {"hooks": [theirs]}], "PreToolUse": [guard]}})
    )
    done = install(home)
    assert done.returncode == 0 and "/hooks" in done.stdout  # the trust step Codex needs is said
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"] == [guard, *OUR_HOOKS["PreToolUse"]]  # theirs first, ours beside it
    assert hooks["Stop"] == [OUR_HOOKS["Stop"][0], {"hooks": [theirs]}]  # ours updated where it stood
    assert {event: hooks[event] for event in OUR_HOOKS if event not in ("Stop", "PreToolUse")} == {
        event: groups for event, groups in OUR_HOOKS.items() if event not in ("Stop", "PreToolUse")
    }


def test_a_dry_run_says_what_it_would_change_and_changes_nothing(home):
    done = install(home, "--dry-run")
    assert done.returncode == 0 and done.stdout.startswith("would update")
    assert (home / "config.toml").read_text() == USER_CONFIG and not (home / "hooks.json").exists()
