"""Private keys that span lines: PEM blocks and PuTTY key files, matched with hand-written scans
(not a lazy ``.*?``) so the work stays linear however the markers are arranged."""

from __future__ import annotations

import re

from reasoningbank.scrubbing.primitives import Finding

_PEM_BEGIN_RE = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# Real keys are a few KB (4096-bit RSA ~3.3 KB, PGP blocks somewhat more). An END marker much
# further away belongs to something else (a script that merely mentions the markers), and
# redacting everything in between would wipe unrelated trace text.
_PEM_MAX_SPAN = 64 * 1024
# A BEGIN marker without an END (a truncated trace) still precedes secret material: take the
# header lines and base64 lines that follow it. Each repetition starts at a line break (real or
# JSON-escaped "\n"), the line classes cannot contain one, and every quantifier is bounded, so
# the work per line is constant; 256 lines is several times the longest real key.
_PEM_TAIL_RE = re.compile(
    r"(?:(?:\r?\n|\\r\\n|\\n)[ \t]{0,16}"
    r"(?:[A-Za-z][A-Za-z-]{0,31}:[^\r\n\\]{0,128}|[A-Za-z0-9+/=]{1,128})?"
    r"(?=\r?\n|\\n|\\r\\n|[ \t]{0,16}$)){0,256}"
)


def pem_find(text: str) -> list[Finding]:
    """PEM private key blocks; linear in ``len(text)``.

    Each search for an END marker starts after the previous block, and its result is reused
    for every BEGIN before it, so no part of the text is scanned twice however many BEGIN
    markers an adversarial trace contains.
    """
    if "PRIVATE KEY" not in text:  # fast path: almost every trace
        return []
    found: list[Finding] = []
    pos = 0
    next_end: re.Match[str] | None = None
    no_more_ends = False
    while (begin := _PEM_BEGIN_RE.search(text, pos)) is not None:
        if not no_more_ends and (next_end is None or next_end.start() < begin.end()):
            next_end = _PEM_END_RE.search(text, begin.end())
            no_more_ends = next_end is None
        if next_end is not None and next_end.start() - begin.end() <= _PEM_MAX_SPAN:
            pos = next_end.end()
            next_end = None
        else:
            tail = _PEM_TAIL_RE.match(text, begin.end())
            pos = tail.end() if tail else begin.end()
        found.append(Finding(begin.start(), pos, "private_key"))
    return found


# PuTTY private key files (.ppk): a header line, then "Name: value" lines and base64 lines up to
# "Private-MAC: <hex>" (version 2 and 3; version 1 ends with "Private-Hash:"). The whole file goes:
# its public half is harmless but names the key, and the private lines are the secret. Each line
# is matched on its own with bounded classes, at most 512 lines, so the work is linear.
_PUTTY_HEADER = "PuTTY-User-Key-File-"
_PUTTY_HEADER_RE = re.compile(r"PuTTY-User-Key-File-[0-9]{1,2}:[^\r\n\\]{0,256}")
_PUTTY_LINE_RE = re.compile(
    r"(?:\r?\n|\\r\\n|\\n)[ \t]{0,16}(?:(?P<name>[A-Za-z][A-Za-z-]{0,31}):[^\r\n\\]{0,256}|[A-Za-z0-9+/=]{1,128})"
    r"(?=\r|\n|\\n|\\r|[ \t]{0,16}$|\\\")"
)
_PUTTY_LAST = ("Private-MAC", "Private-Hash")


def putty_find(text: str) -> list[Finding]:
    if _PUTTY_HEADER not in text:
        return []
    found: list[Finding] = []
    pos = 0
    while (start := text.find(_PUTTY_HEADER, pos)) != -1:
        header = _PUTTY_HEADER_RE.match(text, start)
        if header is None:
            pos = start + len(_PUTTY_HEADER)
            continue
        end = header.end()
        for _ in range(512):
            line = _PUTTY_LINE_RE.match(text, end)
            if line is None:
                break
            end = line.end()
            if line.group("name") in _PUTTY_LAST:
                break
        found.append(Finding(start, end, "private_key"))
        pos = end
    return found
