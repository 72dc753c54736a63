"""Passwords stated in prose: "the password is hunter2x!", "pw: S3cr3t!", "the password for the
staging db was changed to Tr0ub4dor&3". The key-name rules (``assignments``) take "password=x" and a
YAML "password: x" at the start of a line; a sentence is left to this rule, which runs after them.

A sentence about passwords is far more common than one that states one ("the password is stored in
Vault", "the password is 12-characters long", "the password is hashed with argon2id"), so the value
decides: a quoted value without spaces is taken as it is; an unquoted one must look like a password —
at least 6 characters, a letter and a digit or a symbol other than "-", "_" and "." (or 6+ digits), and
not a path, a URL, a
version, a dotted name, a length ("12-characters") or a hashing scheme ("sha256", "bcrypt").
"""

from __future__ import annotations

import re

from reasoningbank.scrubbing.placeholders import is_placeholder
from reasoningbank.scrubbing.primitives import WORD_START, Finding, anchor_positions

_ANCHORS = ("passw", "pw", "passphrase", "passcode")  # "pw" finds "pwd" too
_PROSE_PASSWORD_RE = re.compile(
    WORD_START + r"(?P<key>(?i:password|passwd|passphrase|passcode|pwd|pw))(?![A-Za-z0-9_])"
    # "for the staging db", "of the admin account": up to four words naming what it opens
    r"(?:[ \t]{1,4}(?i:for|of|on)(?:[ \t]{1,4}[^\s:=\"'`]{1,64}){1,4}?)?"
    r"(?:[ \t]{0,4}(?::|=|->|\u2192)[ \t]{0,4}"
    r"|[ \t]{1,4}(?i:is|was|became|becomes)(?:[ \t]{1,4}(?i:now|still|just|simply|actually|(?:changed|set|reset)"
    r"[ \t]{1,4}to))?[ \t]{1,4})"
    # a quoted value (its quotes JSON-escaped in a trace: \"x\"), or an unquoted one not called as a function
    r"(?:\\?(?P<q>[\"'`])(?P<qval>[^\"'`\s\\]{4,128})\\?(?P=q)|(?P<uval>[^\s\"'`<>(){}\[\],;\\]{4,128}+)(?![(\[]))"
)
_TRAILING = ".:?"  # sentence punctuation after an unquoted value ("!" is kept: passwords end with it)
_LETTER_RE = re.compile(r"[A-Za-z]")
# "-", "_" and "." join words ("case-sensitive", "well_known"): a digit or another symbol is needed
_DIGIT_OR_SYMBOL_RE = re.compile(r"[0-9!@#$%^&*+=?~|]")
_NOT_PASSWORDS = (
    re.compile(r"v?\d+(?:\.\d+)+[a-z0-9.-]*", re.I),  # a version
    re.compile(r"\d+[-_]?(?:chars?|characters?|digits?|letters?|bytes?|bits?|symbols?|words?|days?)", re.I),
    re.compile(r"(?:sha-?\d+|md5|bcrypt|scrypt|argon2(?:id|i|d)?|pbkdf2|utf-?8|base64|rot13)(?:[-_][a-z0-9]+)*", re.I),
    re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"),  # settings.DB_PASSWORD, self.pw
    re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"),  # an environment variable's name
    re.compile(r"(?:[a-z][a-z0-9+.-]*://|[/~.]|[A-Za-z]:\\).*"),  # a URL or a path
)


def _password_like(value: str) -> bool:
    if len(value) < 6 or is_placeholder(value) or any(pattern.fullmatch(value) for pattern in _NOT_PASSWORDS):
        return False
    if value.isdigit():
        return True
    return _LETTER_RE.search(value) is not None and _DIGIT_OR_SYMBOL_RE.search(value) is not None


def prose_passwords_find(text: str, lowered: str) -> list[Finding]:
    found: list[Finding] = []
    done = 0
    for position in anchor_positions(lowered, _ANCHORS):
        if position < done:
            continue
        match = _PROSE_PASSWORD_RE.match(text, position)
        if match is None:
            continue
        if match.group("qval") is not None:
            start, end = match.span("qval")
            if is_placeholder(match.group("qval")):
                continue
        else:
            start, end = match.span("uval")
            while end > start and text[end - 1] in _TRAILING:
                end -= 1
            if not _password_like(text[start:end]):
                continue
        found.append(Finding(start, end, "password_in_prose"))
        done = match.end()
    return found
