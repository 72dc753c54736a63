"""The one hook dispatcher every agent's hooks run (integrations/claude-code/hooks/reasoningbank_hooks,
docs/security/hooks.md#one-dispatcher): its registries — an adapter per agent client, a handler per kind
of event — checked against the clients' hook files as they are installed, so that an event a hook file
registers without a handler, or a handler its hook file does not pass, fails here; and what it does with
what it does not know — an agent, an action, an event — said in one line on stderr, never a crash, never
a request. Each hook is run as its client runs it (its entry script, the event on stdin) against a
stand-in for the service (tests/integrations/conftest.py)."""

from __future__ import annotations

import ast
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_hook_events import claude_code_event, codex_event, cursor_event, gemini_event
from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_session_text
from tests.claude_code_transcript import transcript_text
from tests.hook_modules import ADAPTERS, ENTRIES, HANDLERS, HOOKS, INTEGRATIONS, PACKAGE, REPO
from tests.hook_state import hook_env, queue_files

# what the hook files' commands expand to: the plugin's root (Claude Code), the checkout (the others)
COMMAND_VARIABLES = {"${CLAUDE_PLUGIN_ROOT}": INTEGRATIONS / "claude-code", "$REASONINGBANK_HOME": REPO}
# an event of each client's that its hook files do not register (each client's hooks reference lists it)
UNREGISTERED = {
    "claude-code": claude_code_event("SubagentStop", stop_hook_active=False),
    "codex": codex_event("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"}),
    "cursor": cursor_event("afterFileEdit", file_path="/home/dev/shop/cart.py", edits=[]),
    "gemini-cli": gemini_event("BeforeTool", tool_name="run_shell_command", tool_input={}),
}
TRANSCRIPTS = {
    "claude-code": lambda event: transcript_text(session_id=event["session_id"]),
    "codex": lambda event: codex_rollout_text(session_id=event["session_id"]),
    "cursor": lambda event: cursor_transcript_text(),
    "gemini-cli": lambda event: gemini_session_text(session_id=event["session_id"]),
}


def hook_files() -> list[Path]:
    """Every client's hook file: the JSON files under integrations/ with a ``hooks`` table."""
    found = []
    for path in sorted(INTEGRATIONS.rglob("*.json")):
        config = json.loads(path.read_text())
        if isinstance(config, dict) and isinstance(config.get("hooks"), dict):
            found.append(path)
    return found


def registered(path: Path) -> list[tuple[str, Path, str]]:
    """(event, entry script, action) of every command hook in the hook file at ``path``."""
    out = []
    for event, groups in json.loads(path.read_text())["hooks"].items():
        for group in groups:
            for hook in group.get("hooks", [group]):  # Cursor's entries are the hooks themselves
                _, script, action = shlex.split(hook["command"])
                for variable, value in COMMAND_VARIABLES.items():
                    script = script.replace(variable, str(value))
                out.append((event, Path(script), action))
    return out


def entry_agent(script: Path) -> str:
    """The agent an entry script names to the dispatcher: ``main("<agent>", sys.argv)``."""
    calls = [
        node
        for node in ast.walk(ast.parse(script.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "main"
    ]
    (call,) = calls
    assert isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str), script
    return call.args[0].value


def run(script: Path, action: str, event: dict[str, Any] | str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), action],
        input=event if isinstance(event, str) else json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_test"),
        capture_output=True,
        text=True,
        timeout=30,
    )


# --- the registries, against the hook files ------------------------------------------------------------------


def test_the_hook_files_found_are_the_four_clients_and_each_runs_one_agents_entry_script():
    files = {path.relative_to(INTEGRATIONS).as_posix() for path in hook_files()}
    clients = {"claude-code/hooks/hooks.json", "codex/hooks.json", "cursor/hooks.json", "gemini-cli/settings.json"}
    assert files == clients
    agents = {path: {entry_agent(script) for _, script, _ in registered(path)} for path in hook_files()}
    assert all(len(named) == 1 for named in agents.values()), agents
    assert sorted(name for (name,) in agents.values()) == sorted(ADAPTERS)  # every adapter is some file's


@pytest.mark.parametrize("path", hook_files(), ids=lambda path: path.relative_to(INTEGRATIONS).as_posix())
def test_every_event_a_hook_file_registers_has_the_handler_its_command_names_and_no_other(path):
    hooks = registered(path)
    (agent,) = {entry_agent(script) for _, script, _ in hooks}
    adapter = ADAPTERS[agent]
    for event, script, action in hooks:
        assert script in ENTRIES.values() and script.is_file(), (event, script)
        assert adapter.events.get(event) == action, f"{path.name}: {event} runs {action!r}, its adapter says so?"
        assert action in HANDLERS, f"{path.name}: no handler named {action!r}"
    # and the adapter maps no event its hook file leaves out: such a mapping would be dead, or the file stale
    assert set(adapter.events) == {event for event, _, _ in hooks}


def test_every_handler_is_some_agents_and_every_agent_names_itself():
    assert set(HANDLERS) == {action for adapter in ADAPTERS.values() for action in adapter.handlers}
    assert all(name == adapter.name for name, adapter in ADAPTERS.items())
    assert {name: entry_agent(script) for name, script in ENTRIES.items()} == {name: name for name in ENTRIES}


def test_the_check_sees_an_event_added_to_a_hook_file_without_a_handler(tmp_path):
    config = json.loads((INTEGRATIONS / "codex" / "hooks.json").read_text())
    stop = config["hooks"]["Stop"]
    config["hooks"]["PostToolUse"] = stop  # as if someone registered the capture after each tool call
    changed = tmp_path / "hooks.json"
    changed.write_text(json.dumps(config))
    missing = [event for event, _, action in registered(changed) if ADAPTERS["codex"].events.get(event) != action]
    assert missing == ["PostToolUse"]


# --- what the dispatcher does not know ---------------------------------------------------------------------------


@pytest.mark.parametrize("agent", list(UNREGISTERED))
def test_an_event_no_handler_takes_is_said_in_one_line_and_runs_nothing(agent, stand, tmp_path, state_dir):
    state, url = stand
    event = dict(UNREGISTERED[agent])
    transcript = tmp_path / "session"
    transcript.write_text(TRANSCRIPTS[agent](event))  # a capture would have something to send
    event["transcript_path"] = str(transcript)
    done = run(ENTRIES[agent], "capture", event, url)
    assert (done.returncode, done.stdout, state.requests, queue_files(state_dir)) == (0, "", [], [])
    (line,) = done.stderr.splitlines()
    assert f"no handler for {agent}'s {event['hook_event_name']!r} event: it handles " in line


def test_an_event_its_hook_file_gives_another_handler_is_said_and_runs_nothing(stand, state_dir):
    state, url = stand
    done = run(ENTRIES["codex"], "prompt", codex_event("Stop", stop_hook_active=False, prompt="hi"), url)
    assert (done.returncode, done.stdout, state.requests, queue_files(state_dir)) == (0, "", [], [])
    said = "codex's Stop event runs 'capture', not 'prompt': check the hook file"
    assert done.stderr == f"reasoningbank-codex prompt: {said}\n"


def test_an_action_the_agent_has_no_handler_for_is_said_with_those_it_has(stand):
    state, url = stand
    done = run(ENTRIES["cursor"], "prompt", {"conversation_id": "c", "prompt": "how do we deploy?"}, url)
    assert (done.returncode, done.stdout, state.requests) == (0, "", [])
    said = "unknown action 'prompt': cursor's hooks run capture, session-start"
    assert done.stderr == f"reasoningbank-cursor prompt: {said}\n"


def test_an_unknown_agent_is_said_with_the_known_ones_and_nothing_crashes(stand):
    state, url = stand
    program = f"import sys; sys.path.insert(0, {str(HOOKS)!r}); from reasoningbank_hooks.dispatch import main; "
    program += "sys.exit(main('windsurf', sys.argv))"
    done = subprocess.run(
        [sys.executable, "-c", program, "capture"],
        input=json.dumps({"session_id": "s", "hook_event_name": "Stop"}),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_test"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, state.requests) == (0, "", [])
    said = "unknown agent 'windsurf': claude-code, codex, cursor, gemini-cli"
    assert done.stderr == f"reasoningbank-windsurf capture: {said}\n"


@pytest.mark.parametrize("agent", list(ENTRIES))
def test_an_event_that_is_not_json_is_said_in_one_line(agent, stand):
    state, url = stand
    done = run(ENTRIES[agent], "capture", '{"session_id": "s",\n "hook_event_name": ', url)
    assert (done.returncode, done.stdout, state.requests) == (0, "", [])
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{ADAPTERS[agent].label} capture: the hook event on stdin is not JSON (")


# --- the agents' own shapes ----------------------------------------------------------------------------------


def test_each_agents_hooks_name_their_client_to_the_service(stand, tmp_path):
    state, url = stand
    asked = {
        "claude-code": claude_code_event("UserPromptSubmit", prompt="why is the checkout test flaky?"),
        "codex": codex_event("UserPromptSubmit", prompt="why is the checkout test flaky?"),
        "gemini-cli": gemini_event("BeforeAgent", prompt="why is the checkout test flaky?"),
        "cursor": cursor_event("sessionStart", session_id="c0ffee00-cursor"),
    }
    for agent, event in asked.items():
        assert run(ENTRIES[agent], ADAPTERS[agent].events[event["hook_event_name"]], event, url).stderr == ""
    assert state.user_agents == [ADAPTERS[agent].user_agent for agent in asked]
    assert len(set(state.user_agents)) == 4  # the Codex hook no longer says it is the Claude Code plugin
    ended = {**codex_event("SessionEnd"), "transcript_path": str(tmp_path / "rollout.jsonl")}
    Path(ended["transcript_path"]).write_text(codex_rollout_text(session_id=ended["session_id"]))
    assert run(ENTRIES["codex"], "capture", ended, url).stderr == ""
    state.wait_for(5)
    assert state.user_agents[-1] == "reasoningbank-hook-sender (codex)"  # the sender posts it, for Codex


# --- what the hooks may import ---------------------------------------------------------------------------------


def imported(path: Path) -> set[str]:
    """The top-level names of what ``path`` imports (a relative import: ".")."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else str(node.module).split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda path: path.relative_to(HOOKS).as_posix())
def test_the_package_imports_only_the_standard_library_and_itself(path):
    assert imported(path) - {"__future__", "."} <= set(sys.stdlib_module_names)


@pytest.mark.parametrize("name", [*ENTRIES, "sender"])
def test_an_entry_script_finds_the_package_and_calls_it_and_does_nothing_else(name):
    script = ENTRIES.get(name, HOOKS / "reasoningbank_spool.py")
    tree = ast.parse(script.read_text())
    assert imported(script) == {"sys", "os", "reasoningbank_hooks"}  # os.path: pathlib costs every hook its import
    assert not [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    # the package is imported by name from its one folder, never a script loaded from a path
    assert "importlib" not in script.read_text() and "spec_from_file_location" not in script.read_text()


def test_no_hook_loads_another_by_path():
    loaders = [
        path.relative_to(INTEGRATIONS).as_posix()
        for path in INTEGRATIONS.rglob("*.py")
        if "spec_from_file_location" in path.read_text() or "SourceFileLoader" in path.read_text()
    ]
    assert loaders == []
