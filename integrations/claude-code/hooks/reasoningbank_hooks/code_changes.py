"""What a commit changed, as the service's ``code_changes_report`` takes it (docs/code-memory.md#staleness):
each file's status (added, modified, deleted, renamed with its old path), the changed line ranges in the
OLD file's numbering (what anchors were written against) and the symbols — functions and classes,
dotted like ``Parser.parse`` — whose bodies the hunks touch.

Pure and standard-library only: it runs in the git post-commit hook (``scripts/git-code-report``), in the
Claude Code plugin (this package) and in ``bench/code_memory.py``, which all load this one module (the
plugin's folder on ``sys.path``, then ``from reasoningbank_hooks import code_changes``). Python is read
with ``ast`` (old and new content); other languages by a heuristic: a declaration line (def, function,
class, func, fn, …) and its block, by braces or by indentation. A file in a language neither reads gets
``symbols: None``: "not computed", which the service tells apart from "no symbol touched".

Only the innermost symbol around a changed line is reported; the service counts a change inside
``Parser.parse`` as a change of ``Parser`` too (the class's body holds it)."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

FILES_MAX = 1000  # files per report (the service's limit): a larger commit is sent in several reports
HUNKS_MAX = 500  # hunks per file (the service's limit): more are sent as one from the first to the last
SYMBOLS_MAX = 500  # symbols per file (the service's limit): more are sent as not computed
SOURCE_MAX = 2_000_000  # bytes of a file read for its symbols; a bigger (generated) file gets none
# git's statuses → the report's; T (a type change: file ↔ symlink) is a modification, C (copy) an addition
STATUSES = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "modified", "C": "added"}
EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# user and password in a remote's URL (https://user:token@host/…): never sent anywhere
REMOTE_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^@/]*@", re.IGNORECASE)
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

BRACE_LANGUAGES = {
    ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".java", ".kt", ".kts", ".scala", ".go", ".rs", ".c", ".h",
    ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".swift", ".php", ".dart",
}  # fmt: skip
INDENT_LANGUAGES = {".rb", ".pyi"}  # .pyi parses with ast too; the indentation reading is its fallback

# a declaration that opens a named block; group "name" is the symbol, "receiver" a Go method's type
_DECLARATIONS = [
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+|final\s+|sealed\s+|data\s+|open\s+|public\s+|"
               r"private\s+|protected\s+|internal\s+|static\s+|partial\s+|pub(?:\([\w:]+\))?\s+)*"
               r"(?:class|interface|struct|enum|trait|object|module|protocol|record|union)\s+(?P<name>[A-Za-z_$][\w$]*)"),
    re.compile(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?impl(?:<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?(?P<name>[A-Za-z_][\w]*)"),
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>[A-Za-z_$][\w$]*)\s*[<(]"),
    re.compile(r"^\s*func\s+(?:\(\s*\w*\s*\*?\s*(?P<receiver>\w+)(?:\[[^\]]*\])?\s*\)\s*)?(?P<name>\w+)\s*[\[(]"),
    re.compile(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"\w+\"\s+)?"
               r"fn\s+(?P<name>\w+)"),
    re.compile(r"^\s*(?:(?:public|private|protected|internal|override|open|suspend|inline|static|final)\s+)*"
               r"fun\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?(?P<name>\w+)\s*\("),
    re.compile(r"^\s*(?:(?:public|private|protected|static|final|abstract|async|override|def)\s+)*"
               r"def\s+(?:self\.)?(?P<name>[A-Za-z_]\w*[?!]?)"),
    # const name = (…) => / function, and name: function
    re.compile(r"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*"
               r"(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"),
    # a method: modifiers, an optional return type, a name and its parameters, a block (not a call, not a keyword)
    re.compile(r"^\s*(?:(?:public|private|protected|internal|static|final|abstract|virtual|override|async|"
               r"synchronized|readonly|get|set|inline|constexpr|unsafe)\s+)*"
               r"(?:[\w<>\[\],.?*&:]+\s+)*?(?P<name>[A-Za-z_$][\w$]*)\s*\([^;]*$"),
]  # fmt: skip
_NOT_NAMES = {
    "if", "for", "while", "switch", "catch", "return", "else", "do", "try", "with", "new", "throw", "sizeof",
    "typeof", "await", "yield", "case", "when", "match", "elif", "until", "unless", "foreach", "using", "lock",
    "synchronized", "function", "super", "this", "assert", "print", "printf", "defer", "go", "select",
}  # fmt: skip


@dataclass(frozen=True)
class Symbol:
    name: str  # dotted: Parser.parse
    start: int  # first line (its first decorator), 1-based
    end: int  # last line of its body


@dataclass(frozen=True)
class Hunk:
    """One hunk of ``git diff -U0``: its lines in the old file (``old_lines`` 0: lines were only inserted,
    after line ``old_start``) and in the new one."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass
class FileChange:
    status: str  # added | modified | deleted | renamed
    path: str  # the path after the commit (before it, for a deletion)
    old_path: str = ""  # a rename's path before the commit
    hunks: list[Hunk] = field(default_factory=list)
    symbols: list[str] | None = None  # None: not computed (a language neither reading knows, a binary)

    def as_report(self) -> dict[str, Any]:
        """The file as the report's JSON holds it: hunks as git's old-side numbers ``{start, lines}``."""
        body: dict[str, Any] = {"status": self.status, "path": self.path}
        if self.old_path:
            body["old_path"] = self.old_path
        if self.status in ("modified", "renamed"):  # an added file has no old lines, a deleted one went whole
            hunks = self.hunks
            if len(hunks) > HUNKS_MAX:  # one hunk from the first changed line to the last: never less than changed
                last = hunks[-1]
                hunks = [Hunk(hunks[0].old_start, last.old_start + max(last.old_lines, 1) - hunks[0].old_start, 0, 0)]
            body["hunks"] = [{"start": h.old_start, "lines": h.old_lines} for h in hunks]
            if self.symbols is not None and len(self.symbols) <= SYMBOLS_MAX:  # more: not computed, lines decide
                body["symbols"] = self.symbols
        return body


# --- git's output ---------------------------------------------------------------------------------------


def name_status_parse(output: str) -> list[FileChange]:
    """``git diff --name-status -z -M`` output → one change per file, in git's order."""
    parts = output.split("\0")
    changes, i = [], 0
    while i < len(parts):
        code = parts[i].strip()
        if not code:
            i += 1
            continue
        kind = code[0]
        if kind in "RC":
            old, new = parts[i + 1], parts[i + 2]
            i += 3
            if kind == "R":
                changes.append(FileChange("renamed", new, old_path=old))
            else:
                changes.append(FileChange("added", new))
            continue
        path = parts[i + 1]
        i += 2
        if kind in STATUSES:
            changes.append(FileChange(STATUSES[kind], path))
    return changes


def hunks_parse(diff: str) -> list[list[Hunk]]:
    """``git diff -U0`` output → each file's hunks, in the order git lists the files (the order of
    ``--name-status`` with the same options: one ``diff --git`` section per file)."""
    files: list[list[Hunk]] = []
    for line in diff.splitlines():
        if line.startswith("diff --git ") or line.startswith("diff --cc "):
            files.append([])
            continue
        match = HUNK_HEADER.match(line)
        if match and files:
            old_start, old_lines, new_start, new_lines = match.groups()
            files[-1].append(
                Hunk(
                    int(old_start),
                    1 if old_lines is None else int(old_lines),
                    int(new_start),
                    1 if new_lines is None else int(new_lines),
                )
            )
    return files


# --- symbols -------------------------------------------------------------------------------------------


def symbols_of(path: str, source: str) -> list[Symbol] | None:
    """The functions and classes of a file, or None when its language is not read."""
    suffix = ("." + path.rsplit(".", 1)[-1].lower()) if "." in path.rsplit("/", 1)[-1] else ""
    if len(source) > SOURCE_MAX:
        return None
    if suffix in (".py", ".pyi"):
        found = python_symbols(source)
        return found if found is not None else indented_symbols(source)
    if suffix in BRACE_LANGUAGES:
        return braced_symbols(source)
    if suffix in INDENT_LANGUAGES:
        return indented_symbols(source)
    return None


def python_symbols(source: str) -> list[Symbol] | None:
    """Python's functions, methods and classes (nested ones dotted), by ``ast``; None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[Symbol] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append(Symbol(name, start, child.end_lineno or child.lineno))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)  # a function defined under an `if` is still the module's

    visit(tree, "")
    return found


def _declaration(line: str) -> str | None:
    for pattern in _DECLARATIONS:
        match = pattern.match(line)
        if match:
            name = match.group("name")
            if name in _NOT_NAMES:
                return None
            receiver = match.groupdict().get("receiver")
            return f"{receiver}.{name}" if receiver else name
    return None


_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`(?:\\.|[^`\\])*`')


def _code_of(line: str) -> str:
    """A line without its string literals and its // comment: what its braces are counted on."""
    line = _STRINGS.sub('""', line)
    return line.split("//", 1)[0]


def braced_symbols(source: str) -> list[Symbol]:
    """Declarations of a brace language and their blocks: from the declaration line to the brace that
    closes the first ``{`` after it (a ``;`` first means no body: a prototype, an abstract method)."""
    lines = source.splitlines()
    found: list[Symbol] = []
    for number, line in enumerate(lines, start=1):
        name = _declaration(line)
        if name is None:
            continue
        depth, opened, end = 0, False, 0
        for at in range(number - 1, min(len(lines), number - 1 + 20_000)):
            code = _code_of(lines[at])
            for char in code:
                if char == "{":
                    depth, opened = depth + 1, True
                elif char == "}" and opened:
                    depth -= 1
                    if depth == 0:
                        end = at + 1
                        break
                elif char == ";" and not opened:
                    break
            if end or (not opened and (";" in code or at - (number - 1) >= 3)):
                break
        if opened and end:
            found.append(Symbol(name, number, end))
    return _dotted(found)


def indented_symbols(source: str) -> list[Symbol]:
    """Declarations of an indentation language: a block ends before the next non-blank line indented no
    deeper than its declaration (a closing ``end`` at its own depth belongs to it)."""
    lines = source.splitlines()
    found: list[Symbol] = []
    for number, line in enumerate(lines, start=1):
        name = _declaration(line)
        if name is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        end = number
        for at in range(number, len(lines)):
            text = lines[at]
            if not text.strip():
                continue
            depth = len(text) - len(text.lstrip())
            if depth <= indent:
                if depth == indent and text.strip() in ("end", "}"):
                    end = at + 1
                break
            end = at + 1
        found.append(Symbol(name, number, end))
    return _dotted(found)


def _dotted(symbols: list[Symbol]) -> list[Symbol]:
    """Each symbol named after the symbols whose blocks hold it (a method: ``Class.method``)."""
    out: list[Symbol] = []
    stack: list[Symbol] = []
    for symbol in sorted(symbols, key=lambda s: (s.start, -s.end)):
        while stack and not (stack[-1].start <= symbol.start and symbol.end <= stack[-1].end):
            stack.pop()
        name = f"{stack[-1].name}.{symbol.name}" if stack and "." not in symbol.name else symbol.name
        dotted = Symbol(name, symbol.start, symbol.end)
        out.append(dotted)
        stack.append(dotted)
    return out


def innermost(symbols: Sequence[Symbol], lines: Iterable[int]) -> list[str]:
    """The innermost symbol around each of ``lines`` (none for a line outside every symbol), in order."""
    ordered = sorted(symbols, key=lambda s: (s.end - s.start, s.start))  # smallest block first
    touched: dict[str, None] = {}
    for line in lines:
        for symbol in ordered:
            if symbol.start <= line <= symbol.end:
                touched.setdefault(symbol.name)
                break
    return list(touched)


def touched_symbols(
    old: Sequence[Symbol] | None, new: Sequence[Symbol] | None, hunks: Sequence[Hunk]
) -> list[str] | None:
    """The symbols whose bodies ``hunks`` touch: lines removed or replaced, read in the old file's symbols,
    and lines added, in the new file's. None when neither side's symbols are known."""
    if old is None and new is None:
        return None
    names: dict[str, None] = {}
    for hunk in hunks:
        if old and hunk.old_lines:
            for name in innermost(old, _span(hunk.old_start, hunk.old_lines)):
                names.setdefault(name)
        if new and hunk.new_lines:
            for name in innermost(new, _span(hunk.new_start, hunk.new_lines)):
                names.setdefault(name)
    return sorted(names)


def _span(start: int, count: int) -> range:
    return range(start, start + min(count, 100_000))


def remote_clean(remote: str) -> str:
    """A remote's URL without the credentials it may hold (the service normalises the rest)."""
    return REMOTE_USERINFO.sub(r"\1", remote.strip())


# --- one commit -----------------------------------------------------------------------------------------

Git = Callable[..., str]


def git_run(*args: str, cwd: str | None = None) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=cwd, errors="replace").stdout


def commit_changes(sha: str, *, git: Git = git_run) -> tuple[str, int, list[FileChange]]:
    """The commit's full sha, its committer time (unix seconds) and what it changed against its first
    parent (against nothing for a root commit), each file with its hunks and touched symbols."""
    full, committed_at, parents = (
        git("show", "-s", "--format=%H%x1f%ct%x1f%P", sha).strip("\n").split("\x1f")
    )  # \x1f is a space to strip()
    parent = parents.split()[0] if parents.strip() else EMPTY_TREE_SHA1
    changes = name_status_parse(git("-c", "core.quotePath=false", "diff", "--name-status", "-z", "-M", parent, full))
    diff = git(
        "-c", "core.quotePath=false", "diff", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv", parent, full
    )
    for change, hunks in zip(changes, hunks_parse(diff), strict=False):
        change.hunks = hunks
    for change in changes:
        if change.status in ("added", "deleted"):
            continue  # no anchor was written against an added file's lines; a deleted one went whole
        old = _symbols_at(git, parent, change.old_path or change.path)
        new = _symbols_at(git, full, change.path)
        change.symbols = touched_symbols(old, new, change.hunks)
    return full, int(committed_at), changes


def _symbols_at(git: Git, commit: str, path: str) -> list[Symbol] | None:
    try:
        source = git("show", f"{commit}:{path}")
    except (OSError, subprocess.CalledProcessError):
        return None
    if "\0" in source[:8000]:  # a binary file
        return None
    return symbols_of(path, source)


def report_bodies(repository: str, sha: str, committed_at: int, changes: Sequence[FileChange]) -> list[dict[str, Any]]:
    """The commit's report(s): one per ``FILES_MAX`` files (a commit touching none still sends one)."""
    from datetime import datetime

    when = datetime.fromtimestamp(committed_at, tz=UTC).isoformat().replace("+00:00", "Z")
    files = [change.as_report() for change in changes]
    chunks = [files[i : i + FILES_MAX] for i in range(0, len(files), FILES_MAX)] or [[]]
    return [{"repository": repository, "commit": sha, "committed_at": when, "files": chunk} for chunk in chunks]
