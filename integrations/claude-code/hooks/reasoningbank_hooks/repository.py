"""The repository the agent works in: the ``origin`` remote of its working directory, which the service maps
to the project tied to that repository (docs/code-memory.md#projects-by-repository), so that every clone of
it, on any machine, in any directory, reaches the same project without ``REASONINGBANK_PROJECT``.

``git -C <cwd> remote get-url origin`` runs bounded by the hook's budget (at most ``GIT_SECONDS``) and fails
open: no git, no repository, no remote, or too slow — and the call goes out without it, as before. The answer
is kept a few minutes per working directory in the state directory, so a session's many hooks run git once.
The remote is sent as git prints it: the service normalises it (credentials in an https remote are dropped
here, before it leaves the machine)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from typing import Any

from .budget import seconds_left
from .spool import private_dir, state_dir

GIT_SECONDS = 0.5  # a local git answers in milliseconds; one that does not is not worth the hook's budget
CACHE_SECONDS = 300.0
REMOTE_MAX = 600
# https://user:secret@host/… → https://host/… (a token in a remote must never reach the service)
_USERINFO = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*://)[^@/\s]+@", re.IGNORECASE)


def working_directory(event: dict[str, Any]) -> str:
    """The event's working directory: ``cwd`` (Claude Code, Codex, Gemini CLI), else Cursor's first
    ``workspace_roots``; "" when it names none."""
    cwd = event.get("cwd")
    if isinstance(cwd, str) and cwd.strip():
        return cwd
    roots = event.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return ""


def remote_clean(remote: str) -> str:
    """The remote without credentials, trimmed; "" when it is too long or not one line."""
    text = remote.strip()
    if not text or len(text) > REMOTE_MAX or "\n" in text:
        return ""
    match = _USERINFO.match(text)
    return f"{match.group('scheme')}{text[match.end():]}" if match else text


def _cache_file(cwd: str) -> Any:
    return state_dir() / "remotes" / (hashlib.sha256(cwd.encode()).hexdigest()[:32] + ".json")


def _cached(cwd: str) -> str | None:
    try:
        entry = json.loads(_cache_file(cwd).read_text())
        if entry.get("cwd") == cwd and 0 <= time.time() - float(entry["at"]) < CACHE_SECONDS:
            return str(entry["remote"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _cache(cwd: str, remote: str) -> None:
    try:
        path = _cache_file(cwd)
        private_dir(path.parent)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"cwd": cwd, "remote": remote, "at": time.time()}))
        os.replace(temporary, path)
    except OSError:
        pass  # no state directory: git runs again next time


def remote_of(cwd: str) -> str:
    """The ``origin`` remote of the repository ``cwd`` is in, or "" (failing open)."""
    if not cwd or not os.path.isdir(cwd):
        return ""
    cached = _cached(cwd)
    if cached is not None:
        return cached
    timeout = min(GIT_SECONDS, seconds_left())
    if timeout <= 0.05:
        return ""
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "remote", "get-url", "origin"],
            capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError, ValueError):
        return ""  # no git, or too slow: not cached, the next hook may be luckier
    remote = remote_clean(done.stdout) if done.returncode == 0 else ""
    _cache(cwd, remote)  # "no remote" is an answer too
    return remote


def place(event: dict[str, Any]) -> dict[str, str]:
    """What a call says of where the agent works: ``{"repository": remote}`` when no project is named
    (``REASONINGBANK_PROJECT`` wins, the service uses it) and the working directory has a remote."""
    if os.environ.get("REASONINGBANK_PROJECT"):
        return {}
    remote = remote_of(working_directory(event))
    return {"repository": remote} if remote else {}
