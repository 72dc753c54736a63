"""Limits on the JSON this service parses: nesting depth, and NUL characters in its strings.

Python's ``json`` module recurses once per level of nesting, so a body such as ``[[[[…]]]]`` a
thousand levels deep raises ``RecursionError`` inside the parser (a 500 with a traceback anyone can
trigger, before authentication on the open OAuth endpoints); a few hundred levels parse but then
recurse again in every serializer, scrubber and renderer that walks the value. No document of this
service nests more than a handful of levels, so a body deeper than ``JSON_MAX_DEPTH`` (64 by default)
is refused before any parser sees it. ``json_depth_exceeds`` answers that without parsing: it strips
the strings (where brackets mean nothing) and takes the running sum of opening and closing brackets,
in C (``re`` and numpy), so even a body of a few megabytes of brackets costs milliseconds.

PostgreSQL cannot store (or compare) text holding a NUL character, and JSON spells one ``\\u0000``:
``json_nul_field`` names the first field of a parsed value that holds one, so the HTTP guards
(``reasoningbank/middleware_guards.py``) refuse it with a 400 naming that field instead of a
``DataError`` deep inside a query.

No Django here: the export file format (``memories/transfer/export_format.py``) uses it too.
"""

from __future__ import annotations

import json
import re
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

JSON_MAX_DEPTH_DEFAULT = 64
NUL = "\x00"
NUL_MESSAGE = "must not contain NUL characters"
# Values under these keys may hold NUL: a session trace is a pasted terminal log, where a stray NUL
# must not fail the whole hand-in; session_submit removes them before anything is stored.
NUL_TOLERANT_KEYS = frozenset({"trace"})

# a complete JSON string (escapes included), or an unterminated one running to the end
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
_STEPS = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(body: bytes | str) -> int:
    """How deep ``body`` nests arrays and objects (0 for a scalar): the deepest a parser would recurse
    reading it, valid JSON or not."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    import numpy as np  # only here: most bodies never get this far, and settings import this module

    step = np.zeros(256, dtype=np.int32)
    for byte, delta in _STEPS.items():
        step[byte] = delta
    running = np.cumsum(step[np.frombuffer(brackets, dtype=np.uint8)])
    return int(running.max(initial=0))


def json_depth_exceeds(body: bytes | str, limit: int) -> bool:
    """Whether ``body`` nests deeper than ``limit``. A body with no more opening brackets than the
    limit (nearly every request) is answered by two counts."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    return json_depth(data) > limit


def json_depth_message(limit: int) -> str:
    return f"The JSON body nests deeper than {limit} levels of arrays and objects; no request of this service does."


def json_may_hold_nul(body: bytes | str) -> bool:
    """Cheap pre-check: could the parsed value hold a NUL? (JSON writes it ``\\u0000``; a raw NUL byte
    is not valid JSON and fails to parse anyway.)"""
    return (b"\\u0000" in body) if isinstance(body, bytes | bytearray) else ("\\u0000" in body or NUL in body)


def json_nul_field(value: Any, where: str = "") -> str | None:
    """The place of the first string (key or value) holding NUL in a parsed JSON value — the top-level
    field's name for an object, ``item 3`` in an array, ``""`` for a bare string — or None."""
    if isinstance(value, str):
        return where if NUL in value else None
    if isinstance(value, dict):
        for key, inner in value.items():
            name = str(key).replace(NUL, "\\x00")
            if NUL in str(key):
                return where or name
            if key in NUL_TOLERANT_KEYS:
                continue
            found = json_nul_field(inner, where or name)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, inner in enumerate(value):
            found = json_nul_field(inner, where or f"item {index}")
            if found is not None:
                return found
    return None


def json_body_nul_field(body: bytes | str) -> str | None:
    """The field of a JSON body that holds a NUL, or None (also for a body that is not JSON: the view
    answers that itself). Call after ``json_depth_exceeds`` said no: parsing is then safe."""
    if not json_may_hold_nul(body):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return json_nul_field(value)
