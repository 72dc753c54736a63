"""The session's commits, reported by the hooks (docs/code-memory.md#staleness): at session start the
working tree's HEAD is noted; at each capture the commits made since (first-parent, oldest first) that
were not reported yet are queued for the detached sender — what each changed (``code_changes_report``:
files, old-side hunks, touched symbols, read by ``code_changes``) and its tie to the session
(``session_code_report`` ``committed``), so that memories about that code are flagged when it changes
and re-verified when the session that changed it succeeds. The same reports as the git post-commit hook
(``scripts/git-code-report``), for a user who installed the plugin alone; a commit reported by both is
applied once.

Nothing here fails a hook: outside a git repository, without an ``origin`` remote, or with the hook's
time running out, it reports nothing (the next capture takes up what is left)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from . import spool
from .budget import budget_left

COMMITS_MAX = 20  # per capture: the rest wait for the next one
SECONDS_PER_COMMIT = 0.5  # what reading one commit may take; fewer are read when less time is left
REPORTED_KEPT = 500  # shas remembered per session (a longer session reports its oldest again: harmless)
NOTE_KEPT_SECONDS = 30 * 86400  # a session's note untouched for a month is swept: that session is over


def heads_dir() -> Path:
    return spool.private_dir(spool.state_dir() / "heads")


def _note_path(session_key: str) -> Path:
    return heads_dir() / f"{spool.digest(session_key)}.json"


def _git(cwd: str, *args: str) -> str:
    # not code_changes.git_run: that module (the diff reader: ast, dataclasses, a score of regexes compiled
    # at import) is loaded by the capture that reads commits, not by every session start that notes HEAD
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=cwd, errors="replace").stdout


def head_note(session_key: str, cwd: str) -> None:
    """Remember the working tree's HEAD when the session starts (once: a resumed session keeps its start)."""
    if not session_key or not cwd:
        return
    path = _note_path(session_key)
    if path.exists():
        return
    try:
        top = _git(cwd, "rev-parse", "--show-toplevel").strip()
        head = _git(cwd, "rev-parse", "HEAD").strip()
    except (OSError, subprocess.CalledProcessError):
        return  # not a repository, or one without a commit yet
    spool.file_write_atomic(path, json.dumps({"top": top, "head": head, "reported": []}).encode())
    notes_sweep(path.parent)


def notes_sweep(folder: Path) -> None:
    """Forget the notes of sessions nobody captured for a month."""
    now = time.time()
    for note in folder.glob("*.json"):
        try:
            if now - note.stat().st_mtime > NOTE_KEPT_SECONDS:
                note.unlink()
        except OSError:
            continue  # another hook swept it first


def commits_queue(session_key: str, who: spool.Credential, client: str) -> int:
    """Queue the reports of the session's commits not reported yet; how many commits were queued."""
    from . import code_changes

    path = _note_path(session_key)
    try:
        note = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0  # the session started without a note (outside a repository): nothing to report
    top, start, reported = str(note.get("top", "")), str(note.get("head", "")), list(note.get("reported", []))
    try:
        remote = code_changes.remote_clean(_git(top, "remote", "get-url", "origin"))
        shas = _git(top, "rev-list", "--reverse", "--first-parent", f"{start}..HEAD").split()
    except (OSError, subprocess.CalledProcessError):
        return 0
    queued = 0
    for sha in [sha for sha in shas if sha not in reported][:COMMITS_MAX]:
        if budget_left() < SECONDS_PER_COMMIT:
            break
        try:
            full, committed_at, changes = code_changes.commit_changes(sha, git=lambda *a: _git(top, *a))
        except (OSError, subprocess.CalledProcessError, ValueError):
            continue
        for i, body in enumerate(code_changes.report_bodies(remote, full, committed_at, changes)):
            spool.spool_write("/api/v1/code/changes", body, f"code:{full}:{i}", who, client)
        tie: dict[str, Any] = {"session_id": session_key, "commit": full, "status": "committed"}
        spool.spool_write("/api/v1/sessions/code-report", tie, f"tie:{full}", who, client)
        reported.append(full)
        queued += 1
    if queued:
        note["reported"] = reported[-REPORTED_KEPT:]
        spool.file_write_atomic(path, json.dumps(note).encode())
    return queued


def cwd_of(event: dict[str, Any]) -> str:
    value = event.get("cwd")
    return value if isinstance(value, str) and value else os.getcwd()
