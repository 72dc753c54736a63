"""A repository's history read from git, for seeding a bank (docs/code-memory.md#seeding-from-history).

One commit is a ``dict`` in the shape the service accepts (and the shape of an exported history, one JSON
object a line): ``sha``, ``parents``, ``date`` (the author date, ISO 8601), ``author``, ``subject``,
``body``, ``files`` (each ``{path, status, old_path, symbols}``: status ``A``/``M``/``D``/``R``/``C``/``T``,
``old_path`` for a rename or a copy, ``symbols`` the functions and classes its hunks touch), ``reverts``
(the sha a revert names), ``fixes`` (the earlier commits a fix mends) and ``pr`` (the pull request it
merged, when an exported file says so).

Symbols come from the hunk headers git writes with its built-in function-name patterns (``def``/``class``
lines of Python and the like for other languages; a zero-context patch, so only the changed lines'
functions): cheap, no file is read. Everything but ``git_log_read`` and ``git_is_ancestor`` is pure text
processing; those two run ``git`` and nothing else. Standard library only: the Python SDK and the Claude
Code plugin ship this same file (``clients/python/reasoningbank_client/git_history.py``,
``integrations/claude-code/scripts/reasoningbank_git_history.py``; a test keeps the copies identical).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py)

RECORD, FIELD, END = "\x1e", "\x1f", "\x1d"
# sha, parents, author date (strict ISO), author name, raw message
LOG_FORMAT = f"{RECORD}%H{FIELD}%P{FIELD}%aI{FIELD}%an{FIELD}%B{END}"
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
# the name a hunk header's line defines: def/class (Python), func (Go), fn (Rust), function/class (JS, PHP)…
DEFINES = re.compile(
    r"\b(?:async\s+def|def|class|func|fn|function|interface|struct|enum|trait|impl|module|sub)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")  # an export's hunk context that is a name already
REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,64})", re.IGNORECASE)
FIX_WORD = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?(?:\w+(?:\([^)]*\))?:\s*)?(fix|fixes|fixed|fixing|bugfix|hotfix)\b", re.I)
SHA_MENTION = re.compile(r"\b[0-9a-f]{7,40}\b")
SYMBOLS_MAX = 12  # per file: a sweeping change's symbols say little each
# the attributes that turn on git's built-in function-name patterns (no repository file is changed)
DIFF_DRIVERS = {
    "*.py": "python", "*.go": "golang", "*.rs": "rust", "*.java": "java", "*.kt": "kotlin", "*.rb": "ruby",
    "*.php": "php", "*.cs": "csharp", "*.c": "cpp", "*.h": "cpp", "*.cc": "cpp", "*.cpp": "cpp", "*.hpp": "cpp",
    "*.js": "javascript", "*.jsx": "javascript", "*.mjs": "javascript", "*.ts": "javascript",
    "*.tsx": "javascript", "*.ex": "elixir", "*.exs": "elixir", "*.pl": "perl", "*.swift": "swift",
}  # fmt: skip


class GitError(Exception):
    """git could not read the repository (not a repository, an unknown commit): the message says which."""


# --- reading git ---------------------------------------------------------------------------------


def git_log_read(
    repo: str, *, since: str = "", max_commits: int = 0, symbols: bool = True, timeout: float = 600
) -> list[dict[str, Any]]:
    """The commits of ``repo``'s current branch after ``since`` (a commit; all of them without one), oldest
    first; the newest ``max_commits`` when it is set. Merges are read (their parents tie the history) but
    carry no files."""
    spec = f"{since}..HEAD" if since else "HEAD"
    args = ["log", "--reverse", "-M", "--no-color", "--no-ext-diff", f"--format={LOG_FORMAT}"]
    args += ["-p", "-U0"] if symbols else ["--name-status"]
    if max_commits:
        args.append(f"--max-count={int(max_commits)}")
    with tempfile.NamedTemporaryFile("w", suffix=".gitattributes", delete=False) as attributes:
        attributes.write("".join(f"{glob} diff={driver}\n" for glob, driver in DIFF_DRIVERS.items()))
    try:
        command = ["git", "-C", repo, "-c", f"core.attributesFile={attributes.name}", "-c", "core.quotePath=false"]
        done = subprocess.run([*command, *args, spec, "--"], capture_output=True, timeout=timeout, check=False)
    finally:
        os.unlink(attributes.name)
    if done.returncode != 0:
        raise GitError(done.stderr.decode("utf-8", "replace").strip() or f"git log failed in {repo}")
    return git_log_parse(done.stdout.decode("utf-8", "replace"))


def git_is_ancestor(repo: str, older: str, newer: str = "HEAD") -> bool:
    """Whether ``older`` is in ``newer``'s history (False when it is unknown: a force-push dropped it)."""
    done = subprocess.run(
        ["git", "-C", repo, "merge-base", "--is-ancestor", older, newer], capture_output=True, check=False
    )
    return done.returncode == 0


def git_remote(repo: str) -> str:
    """The ``origin`` remote's URL of ``repo`` (the first remote without one), or ""."""
    done = subprocess.run(["git", "-C", repo, "remote", "-v"], capture_output=True, check=False)
    remotes = [line.split()[:2] for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    named = dict(pair for pair in remotes if len(pair) == 2)
    return named.get("origin") or next(iter(named.values()), "")


# --- parsing git's output (pure) -----------------------------------------------------------------


def git_log_parse(text: str) -> list[dict[str, Any]]:
    """``git log`` output in ``LOG_FORMAT`` followed by ``--name-status`` or a ``-p -U0`` patch."""
    commits = []
    for record in text.split(RECORD)[1:]:
        head, _, changes = record.partition(END)
        sha, parents, date, author, message = [*head.split(FIELD, 4), "", "", "", ""][:5]
        subject, _, body = message.strip().partition("\n")
        commit: dict[str, Any] = {
            "sha": sha.strip(),
            "parents": parents.split(),
            "date": date.strip(),
            "author": author.strip(),
            "subject": subject.strip(),
            "body": body.strip(),
            "files": _changes_parse(changes),
        }
        commits.append(commit)
    return commits


def _changes_parse(text: str) -> list[dict[str, Any]]:
    if "diff --git " in text:
        return _patch_parse(text)
    files = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0][:1].isalpha():
            continue
        status = parts[0][0]
        if status in "RC" and len(parts) >= 3:
            files.append({"path": parts[2], "status": status, "old_path": parts[1], "symbols": []})
        else:
            files.append({"path": parts[1], "status": status, "old_path": "", "symbols": []})
    return files


def _patch_parse(text: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current = {"path": _diff_path(line), "status": "M", "old_path": "", "symbols": []}
            files.append(current)
        elif current is None or (line[:1] in ("+", "-", " ", "\\") and not line.startswith(("+++ ", "--- "))):
            continue  # the changed lines themselves
        elif line.startswith("new file mode"):
            current["status"] = "A"
        elif line.startswith("deleted file mode"):
            current["status"] = "D"
        elif line.startswith(("rename from ", "copy from ")):
            current["status"] = "R" if line.startswith("rename") else "C"
            current["old_path"] = line.split(" from ", 1)[1]
        elif line.startswith(("rename to ", "copy to ")):
            current["path"] = line.split(" to ", 1)[1]
        elif line.startswith("+++ b/"):
            current["path"] = line[6:]
        elif line.startswith("@@"):
            header = HUNK.match(line)
            name = symbol_of(header.group(1) if header else "")
            if name and name not in current["symbols"] and len(current["symbols"]) < SYMBOLS_MAX:
                current["symbols"].append(name)
    return files


def _diff_path(line: str) -> str:
    """The new path of a ``diff --git a/x b/x`` line (a path with spaces: the header's second half)."""
    rest = line[len("diff --git ") :]
    half = (len(rest) - 1) // 2
    if rest[half : half + 3] == " b/" and rest.startswith("a/"):
        return rest[half + 3 :]
    return rest.rsplit(" b/", 1)[-1]


def symbol_of(context: str | None) -> str:
    """The function or class a hunk header's context line defines (``def parse(self):`` → ``parse``), or ""."""
    match = DEFINES.search(context or "")
    return match.group(1) if match else ""


# --- an exported history and pull requests -------------------------------------------------------


def history_jsonl_read(lines: Iterable[str]) -> list[dict[str, Any]]:
    """An exported history, one commit a line, in this module's shape — or with ``hunks`` whose ``context``
    names the symbol (or the line defining it) instead of ``symbols``: docs/code-memory.md#seeding-from-history."""
    commits = []
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        files = []
        for change in record.get("files") or []:
            names = list(change.get("symbols") or [])
            for hunk in change.get("hunks") or []:
                context = str(hunk.get("context") or "").strip()
                name = context if NAME.fullmatch(context) else symbol_of(context)
                if name and name not in names and len(names) < SYMBOLS_MAX:
                    names.append(name)
            files.append(
                {
                    "path": change["path"],
                    "status": change.get("status") or "M",
                    "old_path": change.get("old_path") or "",
                    "symbols": names,
                }
            )
        commits.append(
            {
                "sha": record["sha"],
                "parents": list(record.get("parents") or []),
                "date": record.get("date") or "",
                "author": record.get("author") or "",
                "subject": record.get("subject") or "",
                "body": record.get("body") or "",
                "files": files,
            }
        )
    return commits


def pull_requests_read(lines: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Pull requests exported one a line (``{"number", "title", "body", "merge_commit"}``), by merge commit."""
    found = {}
    for line in lines:
        if line.strip():
            record = json.loads(line)
            sha = str(record.get("merge_commit") or "").lower()
            if sha:
                found[sha] = {
                    "number": int(record["number"]),
                    "title": str(record.get("title") or ""),
                    "body": str(record.get("body") or ""),
                }
    return found


# --- fix and revert chains (pure) ----------------------------------------------------------------


def history_chains(commits: list[dict[str, Any]], pulls: dict[str, dict[str, Any]] | None = None) -> None:
    """Fill in each commit's ``reverts``, ``fixes`` and ``pr`` (in place; ``commits`` oldest first).

    A revert names the commit it reverts ("This reverts commit <sha>."). A fix (its subject says fix) mends
    the commits its message names, else the last earlier commit that touched one of the same symbols, else
    the same file. Only commits read here are linked: what came before the range is not known."""
    by_sha: dict[str, str] = {}
    last_symbol: dict[tuple[str, str], str] = {}
    last_path: dict[str, str] = {}
    for commit in commits:
        sha = commit["sha"]
        message = f"{commit['subject']}\n{commit['body']}"
        reverted = REVERTS.search(message)
        commit["reverts"] = _resolve(reverted.group(1), by_sha) if reverted else ""
        fixes: list[str] = []
        if FIX_WORD.search(commit["subject"]):
            fixes = [full for m in SHA_MENTION.findall(message) if (full := _resolve(m, by_sha)) and full != sha]
            if not fixes:
                fixes = _last_toucher(commit, last_symbol, last_path)
        commit["fixes"] = list(dict.fromkeys(fixes))[:5]
        pull = (pulls or {}).get(sha.lower())
        if pull is not None:
            commit["pr"] = pull
        by_sha[sha.lower()] = sha
        for change in commit["files"]:
            last_path[change["path"]] = sha
            for name in change["symbols"]:
                last_symbol[(change["path"], name)] = sha


def _resolve(prefix: str, by_sha: dict[str, str]) -> str:
    prefix = prefix.lower()
    if prefix in by_sha:
        return by_sha[prefix]
    matches = [full for key, full in by_sha.items() if key.startswith(prefix)]
    return matches[0] if len(matches) == 1 else ""


def _last_toucher(
    commit: dict[str, Any], last_symbol: dict[tuple[str, str], str], last_path: dict[str, str]
) -> list[str]:
    touched = [
        last_symbol[(change["path"], name)]
        for change in commit["files"]
        for name in change["symbols"]
        if (change["path"], name) in last_symbol
    ]
    if touched:
        return touched
    return [last_path[p] for p in (c.get("old_path") or c["path"] for c in commit["files"]) if p in last_path][:2]


def history_batches(commits: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """``commits`` in consecutive batches of at most ``size``."""
    for start in range(0, len(commits), max(1, size)):
        yield commits[start : start + max(1, size)]
