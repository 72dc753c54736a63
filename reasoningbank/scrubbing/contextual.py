"""Formats without a prefix of their own, found from a fixed part inside them (Telegram bot tokens) or
from their context (Twilio auth tokens, keys in prose)."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from reasoningbank.scrubbing.primitives import TOKEN_START, Finding, anchor_positions, findings, not_after

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")


def _starts_token(text: str, index: int) -> bool:
    """``text[index]`` is not inside a longer token (``TOKEN_START`` for code that scans by hand)."""
    return index == 0 or text[index - 1] not in _TOKEN_CHARS or text[index - 2 : index] in ("\\n", "\\r", "\\t")


# Telegram bot tokens: "<bot id>:<35 characters starting with A>" ("110201543:AAHdqTcv..."), alone
# or in a Bot API URL (".../bot110201543:AAH.../sendMessage"). The scan finds ":A" with str.find,
# walks back over at most 12 digits and matches forward from there.
_TELEGRAM_SECRET_RE = re.compile(r":A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])")


def telegram_find(text: str) -> list[Finding]:
    found: list[Finding] = []
    done = 0
    index = text.find(":A")
    while index != -1:
        start = index
        while start > index - 12 and start > 0 and text[start - 1] in _DIGITS:
            start -= 1
        digits = index - start
        if (
            start >= done
            and 6 <= digits <= 12
            and (_starts_token(text, start) or text[max(0, start - 3) : start] == "bot")
            and (secret := _TELEGRAM_SECRET_RE.match(text, index)) is not None
        ):
            found.append(Finding(start, secret.end(), "telegram_bot_token"))
            done = secret.end()
        index = text.find(":A", max(index + 2, done))
    return found


# Twilio: an auth token is 32 lower-case hex digits, which is also what an MD5 digest looks like;
# it is taken only on the same line after an Account SID ("AC" + 32 hex), an API key SID ("SK" +
# 32 hex, whose secret is 32 letters and digits) or the word "twilio" — the shape of
# Client("AC...", "<token>"), TwilioRestClient(sid, token) and "twilio token: ...". Each part of
# the text is searched once: a window starts where the previous one ended. The API key's SID goes
# too (an account SID alone names an account, an API key's SID is half of a credential pair).
_TWILIO_SID_RE = re.compile(r"(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])")
_TWILIO_SECRET_RE = re.compile(
    TOKEN_START + r"(?:[0-9a-f]{32}|(?=[a-z0-9]{0,31}[A-Z])[A-Za-z0-9]{32})(?![A-Za-z0-9_-])"
)
_TWILIO_WINDOW = 200
_LINE_END_RE = re.compile(r"[\r\n]|\\n")


def _twilio_anchors(text: str, lowered: str) -> list[tuple[int, int]]:
    """(start, end) of every SID and "twilio" word, in order."""
    found: list[tuple[int, int]] = []
    for prefix in ("AC", "SK"):
        index = text.find(prefix)
        while index != -1:
            if _starts_token(text, index) and (sid := _TWILIO_SID_RE.match(text, index)):
                found.append((index, sid.end()))
            index = text.find(prefix, index + 2)
    index = lowered.find("twilio")
    while index != -1:
        found.append((index, index + 6))
        index = lowered.find("twilio", index + 6)
    return sorted(found)


def twilio_find(text: str, lowered: str) -> list[Finding]:
    if "twilio" not in lowered and "AC" not in text and "SK" not in text:
        return []
    anchors = _twilio_anchors(text, lowered)
    found: list[Finding] = []
    searched = 0
    for anchor_start, anchor_end in anchors:
        if text.startswith("SK", anchor_start):
            found.append(Finding(anchor_start, anchor_end, "twilio_api_key"))
        start = max(anchor_end, searched)
        limit = min(len(text), anchor_end + _TWILIO_WINDOW)
        line_end = _LINE_END_RE.search(text, start, limit)
        end = line_end.start() if line_end else limit
        if start < end:
            for secret in _TWILIO_SECRET_RE.finditer(text, start, end):
                after = text[secret.end() : secret.end() + 1]
                if after and after in _TOKEN_CHARS:
                    continue  # cut by the window: part of a longer word
                found.append(Finding(*secret.span(), "twilio_auth_token"))
        searched = max(searched, end)
    return sorted(found)


# Keys in prose: "the AWS secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY". No key name, no
# prefix: a run of base64/base64url characters is taken when a word that announces a credential
# (key, secret, token, password, credential, aws) stands just before or after it AND the run
# itself looks random. What must survive is decided by the run's shape, each test with a reason:
# * 24-128 characters: shorter runs are mostly words; longer ones are data blobs (images, certs).
# * not only hex digits: git SHAs, MD5/SHA digests, UUIDs (their dashes aside) are hex.
# * upper case, lower case and a digit (or "+" "/"): identifiers and words lack one of them.
# * fewer than 60% of its characters in lower-case words of 4+ letters ("Reasoning", "bank"):
#   camelCase and snake_case identifiers and paths are words; random base64 has few (measured:
#   at most 57% over 2,000 random 40-character keys).
# * Shannon entropy of at least 0.8 × log2(length), capped at 4.4 bits per character.
# * not base64 of text (decodes to printable ASCII): ordinary data, not a key.
# * not after a digest's name ("sha256:", "sha512-", "md5:") or a digest word nearby (hash,
#   digest, checksum, integrity, fingerprint, commit).
# * not part of a file name or host ("a.b", "x/y" is inside the run and judged by its words).
PROSE_CONTEXT = ("key", "secret", "token", "passw", "credential", "aws")
_PROSE_BEFORE, _PROSE_AFTER = 48, 72  # characters around a context word where a run is taken
_PROSE_RUN_RE = re.compile(not_after("A-Za-z0-9+/_.-") + r"[A-Za-z0-9+/_-]{24,}+={0,2}(?![A-Za-z0-9+/_=-])")
_PROSE_WORD_RE = re.compile(r"[A-Z]?[a-z]{3,}")
_HEX_RE = re.compile(r"[0-9a-fA-F-]+")
_DIGEST_RE = re.compile(r"(?i:sha-?(?:1|224|256|384|512)|md5|blake2[bs]?|crc32|h1)[:=-]$")
# an OpenSSH public key: "ssh-ed25519 AAAAC3Nza..." (its base64 starts with a zero length prefix)
_SSH_PUBLIC_RE = re.compile(r"(?:ssh-[a-z0-9]{2,16}|ecdsa-sha2-[a-z0-9]{4,16}|sk-[a-z0-9@.-]{4,40})[ \t]$")
_DIGEST_WORDS_RE = re.compile(r"(?i:hash|digest|checksum|integrity|fingerprint|commit|sha-?\d|md5)")


def _looks_random(run: str) -> bool:
    core = run.rstrip("=")
    size = len(core)
    if not 24 <= size <= 128 or _HEX_RE.fullmatch(core):
        return False
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core)):
        return False
    if not any(c.isdigit() or c in "+/" for c in core):
        return False
    words = sum(len(word) for word in _PROSE_WORD_RE.findall(core))
    if words >= 0.6 * size:
        return False
    entropy = -sum(n / size * math.log2(n / size) for n in Counter(core).values())
    if entropy < min(0.8 * math.log2(size), 4.4):
        return False
    return not _base64_of_text(run)


def _base64_of_text(run: str) -> bool:
    core = run.rstrip("=")
    if len(core) % 4 == 1:
        return False
    padded = core + "=" * (-len(core) % 4)
    try:
        decoded = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    printable = sum(32 <= byte < 127 or byte in (9, 10, 13) for byte in decoded)
    return printable >= 0.9 * len(decoded)


def _prose_candidate(text: str, run: re.Match[str]) -> bool:
    start, end = run.span()
    before = text[max(0, start - 40) : start]
    if before.endswith("[REDACTED:") or _DIGEST_RE.search(before[-12:]):
        return False
    if run.group().startswith("AAAA") or _SSH_PUBLIC_RE.search(before):
        return False  # a public key's wire format: length prefixes, not random bytes
    if text[end : end + 1] == "." and text[end + 1 : end + 2].isalnum():
        return False  # a file name or a host: "x.pem", "abc.example.com"
    if _DIGEST_WORDS_RE.search(before):
        return False
    return _looks_random(run.group())


def _prose_windows(positions: list[int], size: int) -> list[tuple[int, int]]:
    """The stretches around the context words where a run may start, overlapping ones merged (a
    text full of "key" is then searched in one pass, not once per word)."""
    windows: list[tuple[int, int]] = []
    for position in positions:
        start, end = max(0, position - _PROSE_BEFORE), min(size, position + _PROSE_AFTER)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def prose_keys_find(text: str, lowered: str, context: list[int]) -> list[Finding]:
    """``context``: more positions that count as a context word: where a secret of a kind that names
    one was found (a secret key's id announces its secret as the word "key" would)."""
    positions = sorted({*anchor_positions(lowered, PROSE_CONTEXT), *context})
    if not positions:
        return []
    spans: list[tuple[int, int]] = []
    for start, end in _prose_windows(positions, len(text)):
        # endpos a run's length past the window, so that a run starting inside it is seen whole
        for run in _PROSE_RUN_RE.finditer(text, start, min(len(text), end + 160)):
            if run.start() >= end:
                break
            if (not spans or run.start() >= spans[-1][1]) and _prose_candidate(text, run):
                spans.append(run.span())
    return findings(spans, "high_entropy_secret")
