"""The places a session's transcript shows the agent worked in, pure (no Django): the files it read and
edited, the test files it ran, and the errors its failing commands printed — read from its tool calls, never
from what the agent or an LLM says (docs/code-memory.md#distillation). Distillation ties each memory it
makes to the few of these places the memory is about (``places_for_memory``).

A place is a small dict, stored with the session (``AgentSession.places``): ``{"kind": "read" | "edited" |
"test", "path", "symbol"}`` or ``{"kind": "error", "error_signature", "error_text"}``. Paths are made
relative to the session's working directory; a path outside it, or absolute with no working directory to
cut, is left out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from memories.code.anchors import path_normalise
from memories.code.signatures import error_signature

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

READ, EDITED, TEST, ERROR = "read", "edited", "test", "error"
PLACES_MAX = 60  # per session: the files beyond these are the long tail of an exploration
ERRORS_MAX = 5
FALLBACK_EDITED_MAX = 3  # a memory naming no file is tied to the session's edits only when they are this few
MEMORY_PLACES_MAX = 8

# the tools that read or change one file, in every client the converters read (Claude Code, Codex CLI,
# Gemini CLI, Cursor), and the keys their input names it with
READ_TOOLS = frozenset({"Read", "NotebookRead", "read_file", "ReadFile", "view", "read_many_files"})
EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "StrReplace", "apply_patch", "write_file", "replace", "edit_file"}
)
PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path", "target_file", "filePath")
SHELL_TOOLS = frozenset(
    {"Bash", "shell", "exec_command", "local_shell", "run_shell_command", "Shell", "run_terminal_cmd"}
)
# Codex's apply_patch names each file it touches on a line of its own
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.MULTILINE)
# a test file named on a test command's line, with an optional ``::test_name`` (pytest's node ids)
_TEST_FILE = re.compile(
    r"(?<![\w/.-])(?P<path>[\w./-]*(?:test|spec)[\w./-]*\.(?:py|js|jsx|ts|tsx|go|rs|rb|java|kt|php|cs|ex|exs))"
    r"(?:::(?P<symbol>[\w.:\[\]-]+?))?(?=$|[\s;&|)'\"])"
)
_TEST_COMMAND = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|go\s+test|cargo\s+test|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|manage\.py\s+test|mix\s+test|dotnet\s+test)\b"
)
_FAILED = re.compile(r"(\b[1-9]\d*\s+(failed|errors?)\b|\bFAILED\b|\bTraceback \(most recent call last\)|\bpanic:)")


class Call(Protocol):
    """A tool call as the transcript converters read it (``memories.sessions.transcripts.ToolCall``)."""

    name: str
    command: str
    output: str
    is_error: bool
    tool_input: dict[str, Any]


def _paths_of(call: Call) -> list[str]:
    given = call.tool_input if isinstance(call.tool_input, Mapping) else {}
    paths = [str(given[key]) for key in PATH_KEYS if isinstance(given.get(key), str) and given[key].strip()]
    if call.name == "apply_patch":
        paths += _PATCH_FILE.findall(str(given.get("input") or given.get("patch") or ""))
    return paths


def _relative(path: str, root: str) -> str:
    """``path`` relative to the working directory ``root``; "" when it cannot be."""
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[/\\]", path):
        return path_normalise(path, root) if root else ""
    return path_normalise(path)


def session_places(calls: Iterable[Call], root: str = "") -> list[dict[str, Any]]:
    """The places of a session's tool calls, in the order first met, each once (a file read then edited
    is ``edited``)."""
    places: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: dict[str, dict[str, Any]] = {}
    for call in calls:
        if call.name in READ_TOOLS or call.name in EDIT_TOOLS:
            kind = EDITED if call.name in EDIT_TOOLS else READ
            for path in filter(None, (_relative(p, root) for p in _paths_of(call))):
                if (READ, path, "") in places and kind == EDITED:
                    places[(READ, path, "")]["kind"] = EDITED
                elif (EDITED, path, "") not in places:
                    places.setdefault((kind, path, ""), {"kind": kind, "path": path, "symbol": ""})
        if call.name not in SHELL_TOOLS or not call.command:
            continue
        if _TEST_COMMAND.search(call.command):
            for match in _TEST_FILE.finditer(call.command):
                path = _relative(match.group("path"), root)
                if path:
                    symbol = (match.group("symbol") or "").split("[", 1)[0].replace("::", ".")
                    places.setdefault((TEST, path, symbol), {"kind": TEST, "path": path, "symbol": symbol})
        if (call.is_error or _FAILED.search(call.output)) and len(errors) < ERRORS_MAX:
            signature = error_signature(call.output)
            if signature is not None:
                errors.setdefault(
                    signature.digest, {"kind": ERROR, "error_signature": signature.digest, "error_text": signature.text}
                )
    return [*list(places.values())[:PLACES_MAX], *errors.values()]


def places_merge(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A session's places once it is handed in again: what it had and what the new transcript adds (a hook
    sends the transcript's first prompt and end, so the earlier tool calls may no longer be in it); a file
    read before and edited now is ``edited``."""
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    for place in [*before, *after]:
        if not isinstance(place, Mapping):
            continue
        if place.get("kind") == ERROR:
            key: tuple[str, ...] = (ERROR, str(place.get("error_signature", "")))
        else:
            key = ("file", str(place.get("path", "")), str(place.get("symbol", "")))
        known = merged.get(key)
        if known is None or (known.get("kind") == READ and place.get("kind") == EDITED):
            merged[key] = dict(place)
    files = [p for p in merged.values() if p.get("kind") != ERROR]
    errors = [p for p in merged.values() if p.get("kind") == ERROR]
    return [*files[:PLACES_MAX], *errors[:ERRORS_MAX]]


def _named(name: str, paths: Sequence[str]) -> str:
    """The touched path an LLM's file name means: the same path, one ending with it, or the one it ends
    with (an absolute path); "" when none, or when it could mean several (``__init__.py``)."""
    text = name.strip().strip("`'\"").replace("\\", "/").removeprefix("./")
    if not text:
        return ""
    if text in paths:
        return text
    matches = [p for p in paths if p.endswith("/" + text) or text.endswith("/" + p)]
    return matches[0] if len(set(matches)) == 1 else ""


def _mentioned(path: str, text: str, paths: Sequence[str]) -> bool:
    """Whether a memory's text names the file: its path, or its name when no other touched file has it."""
    if path in text:
        return True
    name = posixpath.basename(path)
    if sum(1 for p in paths if posixpath.basename(p) == name) != 1 or "." not in name or len(name) < 5:
        return False
    return re.search(rf"(?<![\w/.-]){re.escape(name)}\b", text) is not None


def places_for_memory(
    places: Sequence[Mapping[str, Any]], *, text: str, outcome: str, named: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The places one distilled memory is about, as anchors (``{"path", "symbol"}`` or ``{"error_signature",
    "error_text"}``). The files: those the LLM named (``named``) that the session really touched — an LLM's
    reply is untrusted, a name the transcript does not show is dropped — and those the memory's text names;
    with neither, the session's edits when they are few. The errors: those whose type the text names, or
    the session's only error when the memory is a failure's lesson."""
    files = [p for p in places if p.get("kind") in (READ, EDITED, TEST) and p.get("path")]
    paths = [str(p["path"]) for p in files]
    chosen: dict[tuple[str, str], dict[str, Any]] = {}

    def take(place: Mapping[str, Any]) -> None:
        chosen.setdefault((str(place["path"]), str(place.get("symbol") or "")), {
            "path": str(place["path"]), "symbol": str(place.get("symbol") or "")
        })  # fmt: skip

    for name in named:
        target = _named(str(name), paths)
        for place in files:
            if place["path"] == target:
                take(place)
    for place in files:
        if _mentioned(str(place["path"]), text, paths):
            take(place)
    edited = [p for p in files if p.get("kind") == EDITED]
    if not chosen and 0 < len(edited) <= FALLBACK_EDITED_MAX:
        for place in edited:
            take(place)
    errors = [p for p in places if p.get("kind") == ERROR and p.get("error_signature")]
    found = [e for e in errors if str(e.get("error_text", "")).split(":", 1)[0].split(" (", 1)[0] in text]
    if not found and len(errors) == 1 and outcome in ("failure", "mixed"):
        found = errors
    anchors = list(chosen.values())[:MEMORY_PLACES_MAX]
    anchors += [{"error_signature": e["error_signature"], "error_text": e["error_text"]} for e in found]
    return anchors
