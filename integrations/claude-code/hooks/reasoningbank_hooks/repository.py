"""The repository the agent works in: the ``origin`` remote of its working directory, which the service maps
to the project tied to that repository (docs/code-memory.md#projects-by-repository), so that every clone of
it, on any machine, in any directory, reaches the same project without ``REASONINGBANK_PROJECT``.
The remote is read from git's own files (``worktree.py``: no git process, so no git needed and no time
spent) and fails open: no repository or no remote, and the call goes out without it, as before. It is sent
as git stores it, the service normalises it; credentials in an https remote are dropped here, before it
leaves the machine."""

from __future__ import annotations

import os
import re
from typing import Any

from .worktree import worktree_of

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
    return f"{match.group('scheme')}{text[match.end() :]}" if match else text


def remote_of(path: str) -> str:
    """The ``origin`` remote of the repository ``path`` is in, without credentials, or "" (failing open)."""
    return remote_clean(worktree_of(path).remote) if path else ""


def place(event: dict[str, Any]) -> dict[str, str]:
    """What a call says of where the agent works: ``{"repository": remote}`` when no project is named
    (``REASONINGBANK_PROJECT`` wins, the service uses it) and the working directory has a remote."""
    if os.environ.get("REASONINGBANK_PROJECT"):
        return {}
    remote = remote_of(working_directory(event))
    return {"repository": remote} if remote else {}
