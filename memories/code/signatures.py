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

# "KeyError: 'x'", "django.db.utils.IntegrityError: …", "AssertionError", "error[E0382]: …", "panic: …"; Java's
# "Exception in thread "main" java.lang.…" and its root cause's "Caused by: …"
_EXCEPTION = re.compile(
    r'^(?:E\s+|\s*)(?:Caused by:\s*|Exception in thread "[^"]*"\s+)?'
    r"(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Failure|Fault|Interrupt|Exit|Warning)"
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
# Rust: the place an error[E…] points at ( --> src/cart.rs:14:20): a file, no function
_RUST_PLACE = re.compile(r"^\s*--> (?P<file>[^:\s]+):\d+:\d+")
# pytest's default (long) form: a frame's source (its "def name(" line), then its location line; the last
# location names the exception's type, whose message is on the "E" lines above it
_PYTEST_DEF = re.compile(r"^\s*def (?P<func>\w+)\(")
_PYTEST_LOCATION = re.compile(r"^(?P<file>[\w./\\-]+\.py):\d+: ?(?P<type>[A-Z]\w*)?\s*$")
_PYTEST_E_LINE = re.compile(r"^E\s+(?P<text>.*)$")
# go test: "--- FAIL: TestName (0.00s)" with the test's own "file_test.go:12: message" lines near it
_GO_FAIL = re.compile(r"^\s*--- FAIL: (?P<test>[\w/.-]+)")
_GO_TEST_LINE = re.compile(r"^\s+(?P<file>[\w.-]+\.go):\d+: (?P<message>.+)$")
# Rust's panic: "thread 'name' panicked at src/x.rs:3:9:" then the message (1.73+), or the older
# "thread 'name' panicked at 'message', src/x.rs:3:9"
_RUST_PANIC = re.compile(
    r"^thread '(?P<thread>[^']*)' panicked at (?:'(?P<message>.*)', )?(?P<file>[^:\s']+):\d+:\d+:?$"
)

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
    """Frames in the order they appear, as ``file:function`` (or the file alone)."""
    frames: list[str] = []
    function = ""  # pytest's long form: the last "def" seen, whose location line comes after its source
    for index, line in enumerate(lines):
        if match := _PYTEST_DEF.match(line):
            function = match.group("func")
        elif function and (match := _PYTEST_LOCATION.match(line)):
            frames.append(f"{_file_name(match.group('file'))}:{function}")
            function = ""
        elif match := _PY_FRAME.match(line) or _PYTEST_FRAME.match(line):
            frames.append(f"{_file_name(match.group('file'))}:{match.group('func')}")
        elif match := _RUST_PLACE.match(line):
            frames.append(_file_name(match.group("file")))
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
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].rstrip()
        if match := _EXCEPTION.match(line):
            raw_type = match.group("type")
            exc_type = raw_type.rsplit(".", 1)[-1] if raw_type[0].isalpha() else raw_type
            return _signature(exc_type, match.group("message") or "", lines, index)
        if (match := _PYTEST_LOCATION.match(line)) and match.group("type"):
            return _pytest_long(match.group("type"), lines, index)
        if match := _GO_FAIL.match(line):
            return _go_test(match.group("test"), lines, index)
        if match := _RUST_PANIC.match(line):
            message = match.group("message")
            if message is None:  # 1.73+: the message is the next line
                message = lines[index + 1] if index + 1 < len(lines) else ""
            frame = f"{_file_name(match.group('file'))}:{match.group('thread')}"
            return ErrorSignature(type="panicked", message=message_normalise(message), frames=(frame,))
    return None


def _signature(exc_type: str, message: str, lines: list[str], index: int) -> ErrorSignature:
    # frames printed after the error are its own (JavaScript, Java's root cause, Go, Rust), whatever an
    # earlier error left above it; Python's come before it and nothing of the kind follows
    after = _frames(lines[index + 1 : index + 1 + 60])
    if after:
        frames = after[:TOP_FRAMES]
    else:
        frames = list(reversed(_frames(lines[:index])[-TOP_FRAMES:]))
    return ErrorSignature(type=exc_type, message=message_normalise(message), frames=tuple(frames))


def _pytest_long(exc_type: str, lines: list[str], index: int) -> ErrorSignature:
    """pytest's long form: the type on the last location line, the message on the first "E" line of the
    block above it (an exception's own line loses its "Type: "; an assertion's is the assertion)."""
    start = index
    while start > 0 and (lines[start - 1].startswith("E ") or not lines[start - 1].strip()):
        start -= 1
    e_lines = [m.group("text") for line in lines[start:index] if (m := _PYTEST_E_LINE.match(line))]
    message = e_lines[0] if e_lines else ""
    if (own := _EXCEPTION.match(message)) and own.group("type").rsplit(".", 1)[-1] == exc_type:
        message = own.group("message") or ""
    frames = list(reversed(_frames(lines[: index + 1])[-TOP_FRAMES:]))
    return ErrorSignature(type=exc_type, message=message_normalise(message), frames=tuple(frames))


def _go_test(test: str, lines: list[str], index: int) -> ErrorSignature:
    """go test's failure: the test's first message line, just after "--- FAIL" (go test) or just before
    it (go test -v prints the test's log first)."""
    near = lines[index + 1 : index + 20] + lines[max(0, index - 20) : index][::-1]
    for line in near:
        if match := _GO_TEST_LINE.match(line):
            frame = f"{match.group('file')}:{test}"
            return ErrorSignature(type="FAIL", message=message_normalise(match.group("message")), frames=(frame,))
    return ErrorSignature(type="FAIL", message="", frames=(test,))
