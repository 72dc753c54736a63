"""What only decoding shows: base64 runs that wrap a secret ("echo cmJfQ... | base64 -d", a Kubernetes
secret's data, an environment variable holding a token's base64), and Discord bot tokens, whose first
part is the base64 of the bot's numeric id.

Both start from the long runs of base64 characters, found once per text without a regex: the text is
mapped byte for byte to "a" (a base64 character) or " " (anything else) and searched for 23 "a"s in a
row (``bytes.find`` skips ahead; a regex would try every position). A trace of code and prose has
about one such run per 2 KB.

A base64 run is decoded only when it can be base64 of text: in base64 of printable ASCII every fourth
character, from the start, stands for the top six bits of a printable byte (``I``–``Z``, ``a``–``f``;
``C``/``D`` for a tab or line break), which random runs, hashes and identifiers seldom are (one in ~100
at 24 characters, fewer longer) and binary data (images) never is past a few bytes. The decoded text
is read by every rule (not decoded again); if it holds a secret, the whole run is the secret
(``base64_encoded_secret``), and our own credentials in it are handed back for revocation.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from collections.abc import Callable

from reasoningbank.scrubbing.primitives import FILL, Finding

_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_RUN_TABLE = bytes(ord("a") if byte in _RUN_CHARS else ord(" ") for byte in range(256))
RUN_MIN = 23  # a Discord id of 17 digits is 23 characters of base64; base64 of a secret at least 24
_RUN_NEEDLE = b"a" * RUN_MIN

# base64 of printable ASCII text (tab and line breaks included): each group's first character is the
# top six bits of a printable byte; a last group of two or three characters, padded or not
_TEXT_B64_RE = re.compile(
    r"(?:[CDI-Za-f][A-Za-z0-9+/_-]{3}){6,}+(?:[CDI-Za-f][A-Za-z0-9+/_-]{1,2})?={0,2}"
)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DECODED_MAX = 1_000_000  # characters of base64 decoded and read at most per run (a bigger one is data)
_SEPARATOR = "\n" + FILL + "\n"


def long_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) of every run of at least ``RUN_MIN`` base64 characters (``+/_-`` included), in order."""
    mapped = text.encode("latin-1", "replace").translate(_RUN_TABLE)  # one byte per character: same positions
    runs: list[tuple[int, int]] = []
    index = mapped.find(_RUN_NEEDLE)
    while index != -1:
        start = mapped.rfind(b" ", 0, index) + 1
        end = mapped.find(b" ", index + RUN_MIN)
        if end == -1:
            end = len(mapped)
        runs.append((start, end))
        index = mapped.find(_RUN_NEEDLE, end)
    return runs


# --- Discord bot tokens ------------------------------------------------------------------------------
# "<base64 of the bot's id>.<6-7 characters: a timestamp>.<27-38 characters: an HMAC>". The first part
# is checked by decoding it: 17 to 20 decimal digits, a Discord id, which no other token starts with.
_DISCORD_REST_RE = re.compile(r"\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])")
_URLSAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _decimal_id(part: str) -> bool:
    try:
        decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return False
    return 17 <= len(decoded) <= 20 and decoded.isdigit()


def discord_find(text: str, runs: list[tuple[int, int]]) -> list[Finding]:
    found: list[Finding] = []
    for run_start, run_end in runs:
        if text[run_end : run_end + 1] != ".":
            continue
        start = run_end
        while start > run_start and text[start - 1] in _URLSAFE:  # the part after any "+" or "/"
            start -= 1
        if not 23 <= run_end - start <= 27 or text[start] not in "MNO":
            continue
        rest = _DISCORD_REST_RE.match(text, run_end)
        if rest is not None and _decimal_id(text[start:run_end]):
            found.append(Finding(start, rest.end(), "discord_bot_token"))
    return found


# --- base64 runs -------------------------------------------------------------------------------------


def _decoded_text(run: str) -> str | None:
    """What ``run`` decodes to, if it is base64 of printable text."""
    core = run.rstrip("=")
    if "-" in core or "_" in core:
        if "+" in core or "/" in core:
            return None  # two alphabets: not one base64 string
        core = core.replace("-", "+").replace("_", "/")
    if len(core) % 4 == 1:
        return None
    try:
        decoded = base64.b64decode(core + "=" * (-len(core) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    if not decoded.isascii():
        return None
    inner = decoded.decode("ascii")
    return None if _CONTROL_RE.search(inner) else inner


def base64_find(
    text: str, runs: list[tuple[int, int]], inner_find: Callable[[str], list[Finding]]
) -> list[Finding]:
    """The runs that decode to text holding a secret. ``inner_find`` reads every decoded text at once,
    each between two line breaks around a FILL (no finding crosses one), so that many small runs cost
    one pass of the rules, not one each."""
    candidates: list[tuple[int, int, str]] = []
    for run_start, run_end in runs:
        end = run_end
        while text[end : end + 1] == "=" and end - run_end < 2:  # padding is no run character
            end += 1
        if end - run_start < 24 or end - run_start > _DECODED_MAX or text.find(FILL, run_start, end) != -1:
            continue
        candidate = _TEXT_B64_RE.fullmatch(text, run_start, end)
        if candidate is not None and (inner := _decoded_text(candidate.group())) is not None:
            candidates.append((run_start, end, inner))
    if not candidates:
        return []
    starts: list[int] = []  # where each decoded text starts in the joined one
    position = 0
    for _, _, inner in candidates:
        starts.append(position)
        position += len(inner) + len(_SEPARATOR)
    own: dict[int, list[str]] = {}
    for secret in inner_find(_SEPARATOR.join(inner for _, _, inner in candidates)):
        index = bisect_right(starts, secret.start) - 1
        own.setdefault(index, []).extend(secret.own)
    return [
        Finding(candidates[index][0], candidates[index][1], "base64_encoded_secret", tuple(own[index]))
        for index in sorted(own)
    ]
