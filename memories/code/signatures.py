"""Error signatures, pure (no Django): what a failing command's output is "the same error" by — the
normalised exception type, message and top frames — so a test failing today finds the memory of the fix
for the same failure last month (docs/code-memory.md#error-signatures).

The message keeps its words and drops what varies between two runs of one failure: numbers, hexadecimal
addresses, UUIDs, temporary and absolute paths, quoted values longer than an identifier. Frames keep the
function and the file's name, not its directory or line (both move with unrelated edits). The signature
is the hash of type, message and the three innermost frames; the readable form is stored beside it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

TOP_FRAMES = 3
TEXT_MAX = 500
# read at most this much of a command's output, from its end: the error is at the end
OUTPUT_TAIL = 20_000

# "KeyError: 'x'", "django.db.utils.IntegrityError: …", "AssertionError", "error[E0382]: …", "panic: …"
_EXCEPTION = re.compile(
    r"^(?:E\s+|\s*)(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Failure|Fault|Interrupt|Exit|Warning)"
    r"|panic|error\[E\d+\]|fatal error)(?::\s*(?P<message>.*))?$"
)
# Python: File "/x/y.py", line 3, in name
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+, in (?P<func>[\w<>.]+)')
# pytest short form: path/to/test_x.py:12: in test_name / path.py:12: KeyError
_PYTEST_FRAME = re.compile(r"^(?P<file>[\w./\\-]+\.py):\d+: in (?P<func>[\w<>.]+)")
# JavaScript / TypeScript: at name (file:line:col) / at file:line:col
_JS_FRAME = re.compile(r"^\s*at (?:(?P<func>[\w$.<>\[\] ]+?) \()?(?P<file>[^():\s]+):\d+:\d+\)?\s*$")
# Go: pkg.Func(...) then a tab and file:line
_GO_FRAME = re.compile(r"^(?P<func>[\w./*()]+)\([^)]*\)$")
# Java / Kotlin: at com.acme.Thing.method(Thing.java:12)
_JAVA_FRAME = re.compile(r"^\s*at (?P<func>[\w$.]+)\((?P<file>[\w$]+\.\w+):\d+\)")

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_HEX = re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b", re.IGNORECASE)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.@+-]+){2,}[/\\]?")
_NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?")
_QUOTED = re.compile(r"(['\"])(?P<value>[^'\"]{33,})\1")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class ErrorSignature:
    type: str
    message: str
    frames: tuple[str, ...]

    @property
    def text(self) -> str:
        """The readable form: ``KeyError: 'user' (in views.py:load, models.py:get)``."""
        head = f"{self.type}: {self.message}" if self.message else self.type
        where = f" (in {', '.join(self.frames)})" if self.frames else ""
        return (head + where)[:TEXT_MAX]

    @property
    def digest(self) -> str:
        key = "\n".join([self.type, self.message, *self.frames])
        return hashlib.sha256(key.encode()).hexdigest()


def message_normalise(message: str) -> str:
    """The words of a message without what changes between two runs of one failure."""
    text = _UUID.sub("<uuid>", message)
    text = _PATH.sub(lambda m: "<path>/" + re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1], text)
    text = _HEX.sub("<hex>", text)
    text = _QUOTED.sub(lambda m: m.group(1) + "…" + m.group(1), text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:300]


def _file_name(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def _frames(lines: list[str]) -> list[str]:
    """Frames in the order they appear, as ``file:function`` (or the function alone)."""
    frames: list[str] = []
    for index, line in enumerate(lines):
        if match := _PY_FRAME.match(line) or _PYTEST_FRAME.match(line):
            frames.append(f"{_file_name(match.group('file'))}:{match.group('func')}")
        elif match := _JAVA_FRAME.match(line):
            frames.append(f"{match.group('file')}:{match.group('func').rsplit('.', 1)[-1]}")
        elif match := _JS_FRAME.match(line):
            func = (match.group("func") or "").strip() or "<anonymous>"
            frames.append(f"{_file_name(match.group('file'))}:{func}")
        elif (match := _GO_FRAME.match(line)) and index + 1 < len(lines) and lines[index + 1].startswith("\t"):
            frames.append(
                f"{_file_name(lines[index + 1].strip().split(':')[0])}:{match.group('func').rsplit('.', 1)[-1]}"
            )
    return frames


def error_signature(output: str) -> ErrorSignature | None:
    """The signature of the last error in a command's output, or None when it names none. Python prints
    its frames outermost first, then the exception; JavaScript, Java and Go print the error first, then
    frames innermost first — so the innermost frames are the last ones before the exception (Python) or
    the first ones after it (the others)."""
    lines = output[-OUTPUT_TAIL:].splitlines()
    found = None
    for index in range(len(lines) - 1, -1, -1):
        match = _EXCEPTION.match(lines[index].rstrip())
        if match:
            found = index, match
            break
    if found is None:
        return None
    index, match = found
    exc_type = match.group("type").rsplit(".", 1)[-1] if match.group("type")[0].isalpha() else match.group("type")
    message = message_normalise(match.group("message") or "")
    before = _frames(lines[:index])
    after = _frames(lines[index + 1 : index + 1 + 60])
    if after and not before:
        frames = after[:TOP_FRAMES]
    else:
        frames = list(reversed(before[-TOP_FRAMES:]))
    return ErrorSignature(type=exc_type, message=message, frames=tuple(frames))
