"""Secret scrubbing for session traces, before they are stored and before any LLM sees them.

Agents hand in raw transcripts: shell output, config files, HTTP logs. Those routinely contain
credentials, and a credential that reaches the database or a third-party LLM has leaked. Every
trace therefore passes through ``scrub_secrets`` first, which replaces each secret with
``[REDACTED:<kind>]`` so the trace stays readable ("the deploy failed because the
AWS key [REDACTED:aws_access_key_id] was expired") while the value is gone.

Design rules, each with a reason:

* Precision over cleverness: every pattern is anchored on a well-known token format or on an
  explicit key name, and has negative tests. Scrubbing that mangles ordinary code makes the
  distilled memories worse, and people then turn it off.
* Linear time: traces are large (MBs) and partly attacker-controlled, so no pattern may
  backtrack catastrophically. Quantifiers are bounded or possessive, character classes do not
  overlap the text that follows them, and the one construct that spans lines (PEM blocks) is
  matched with a hand-written scan instead of a lazy ``.*?``.
* Idempotent: ``[REDACTED:...]`` never matches any pattern, so scrubbing an already scrubbed
  trace changes nothing and counts nothing.
* Stdlib only, no Django, so it can run anywhere (API view, worker, a CLI).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SECRET_KINDS", "ScrubResult", "redaction_marker", "scrub_secrets"]


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text, how many secrets were replaced, and which kinds (sorted, unique)."""

    text: str
    redactions: int
    kinds: tuple[str, ...]


def redaction_marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# ----------------------------------------------------------------------------------------------
# PEM private keys (multi-line)
# ----------------------------------------------------------------------------------------------

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


def _scrub_pem(text: str) -> tuple[str, int]:
    """Replace PEM private key blocks; linear in ``len(text)``.

    Each search for an END marker starts after the previous block, and its result is reused
    for every BEGIN before it, so no part of the text is scanned twice however many BEGIN
    markers an adversarial trace contains.
    """
    if "PRIVATE KEY" not in text:  # fast path: almost every trace
        return text, 0
    marker = redaction_marker("private_key")
    out: list[str] = []
    pos = count = 0
    next_end: re.Match[str] | None = None
    no_more_ends = False
    while (begin := _PEM_BEGIN_RE.search(text, pos)) is not None:
        out.append(text[pos : begin.start()])
        count += 1
        if not no_more_ends and (next_end is None or next_end.start() < begin.end()):
            next_end = _PEM_END_RE.search(text, begin.end())
            no_more_ends = next_end is None
        if next_end is not None and next_end.start() - begin.end() <= _PEM_MAX_SPAN:
            pos = next_end.end()
            next_end = None
        else:
            tail = _PEM_TAIL_RE.match(text, begin.end())
            pos = tail.end() if tail else begin.end()
        out.append(marker)
    out.append(text[pos:])
    return "".join(out), count


# ----------------------------------------------------------------------------------------------
# Single-line patterns
# ----------------------------------------------------------------------------------------------

# Characters a token is made of; used in look-behinds so that a token inside a longer word
# ("ask-ant-...", "my_rb_...") is not treated as one.
_TOKEN_START = r"(?<![A-Za-z0-9_-])"


@dataclass(frozen=True)
class _Rule:
    """One secret format.

    ``anchors`` are lower-case literals every match starts with. The scrubber finds them with
    ``str.find`` on a lower-cased copy of the text and only runs ``pattern.match`` there:
    Python's regex engine is slow at trying a pattern at every position (a leading look-behind
    or a case-insensitive key name costs ~100-250 ms per MB and rule), ``str.find`` is not.
    """

    kind: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    # None: the whole match is the secret. Otherwise a callable that gets the match and the
    # marker and returns the replacement text, or None to leave this match alone.
    replace: Callable[[re.Match[str], str], str | None] | None = None


def _keep_prefix(match: re.Match[str], marker: str) -> str | None:
    """For patterns with a ``prefix`` group to keep (a key name, a header) and a secret value."""
    return match.group("prefix") + marker


def _url_password(match: re.Match[str], marker: str) -> str | None:
    password = match.group("password")
    if password.startswith(("$", "{", "<", "%", "*")):
        return None  # "${DB_PASSWORD}", "<password>", "****": a placeholder, not a secret
    return match.group("prefix") + marker + "@"


# Unquoted values that are code or configuration syntax, not secrets: keeping them makes
# "def login(password: str)" or "password = None" survive scrubbing untouched.
_NOT_SECRET_WORDS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "str", "string", "int", "bytes",
        "bool", "any", "optional", "secretstr", "required",
    }
)  # fmt: skip
_IDENTIFIER_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_WORDS_RE = re.compile(r"pass|pwd|secret|key|token", re.IGNORECASE)


def _at_line_start(text: str, start: int) -> bool:
    """True when only indentation (or a YAML "- ") precedes ``start`` on its line.

    A JSON-escaped "\\n" counts as a line break (traces are often JSON). Looks back at most
    80 characters so that many matches on one huge line stay linear.
    """
    window_start = max(0, start - 80)
    window = text[window_start:start]
    real = window.rfind("\n")
    escaped = window.rfind("\\n")
    line_start = max(real + 1 if real != -1 else -1, escaped + 2 if escaped != -1 else -1)
    if line_start == -1:
        if window_start > 0:
            return False  # no line break within 80 characters: not the start of a line
        line_start = 0
    return window[line_start:].strip(" \t-") == ""


_METAVAR_RE = re.compile(r"[A-Z][A-Z_-]*")


def _cli_value(match: re.Match[str], marker: str) -> str | None:
    if _METAVAR_RE.fullmatch(match.group("value")):
        return None  # "--password PASSWORD" in --help output is a metavar, not a password
    return match.group("prefix") + marker


def _assignment(match: re.Match[str], marker: str) -> str | None:
    """``password = "x"`` -> ``password = "[REDACTED:secret_assignment]"``; code is left alone."""
    if match.group("qval") is not None:
        return match.group("prefix") + match.group("q") + marker
    value = match.group("uval")
    lowered = value.lower()
    if lowered in _NOT_SECRET_WORDS or value.startswith(("$", "%", "{", "<", "*", "/", "~", "@")):
        return None
    if _IDENTIFIER_PATH_RE.fullmatch(value):
        return None  # settings.SECRET_KEY, self.password, os.environ
    if _IDENTIFIER_RE.fullmatch(value) and (
        lowered == match.group("key").lower() or ("_" in value and _SECRET_WORDS_RE.search(value))
    ):
        return None  # password=password, api_key=new_api_key: passing a variable along
    if ":" in match.group("sep") and "=" not in match.group("sep"):
        # "key: value" unquoted is YAML only at the start of a line; elsewhere it is prose
        # ("error: password: too short") or a type annotation, which must not be mangled.
        if not _at_line_start(match.string, match.start()):
            return None
    return match.group("prefix") + marker


_CLI_FLAGS = (
    "--password", "--passwd", "--api-key", "--client-secret", "--access-token", "--auth-token",
    "--secret",
)  # fmt: skip

_RULES: tuple[_Rule, ...] = (
    # Anthropic: sk-ant-api03-..., sk-ant-admin01-..., sk-ant-oat01-...
    _Rule(
        "anthropic_key", ("sk-ant-",), re.compile(_TOKEN_START + r"sk-ant-[A-Za-z0-9_-]{20,}+")
    ),
    # OpenAI: sk-<48>, sk-proj-..., sk-svcacct-..., sk-admin-... The digit requirement keeps
    # kebab-case words that happen to start with "sk-" out; a random 48-char key without a
    # digit is a ~1-in-5000 event.
    _Rule(
        "openai_key",
        ("sk-",),
        re.compile(
            _TOKEN_START + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]{0,256}[0-9])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    _Rule(
        "stripe_key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        re.compile(_TOKEN_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    ),
    _Rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            _TOKEN_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+)"
        ),
    ),
    _Rule(
        "slack_token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"),
        re.compile(_TOKEN_START + r"(?:xox[abprs]|xapp)-[A-Za-z0-9-]{10,}+"),
    ),
    _Rule(
        "google_api_key",
        ("aiza",),
        re.compile(_TOKEN_START + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ),
    _Rule("huggingface_token", ("hf_",), re.compile(_TOKEN_START + r"hf_[A-Za-z0-9]{34,}+")),
    _Rule(
        "aws_access_key_id",
        ("akia", "asia"),
        re.compile(r"(?<![A-Za-z0-9])A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    # Our own API tokens: "rb_" + secrets.token_urlsafe(32). Requiring both an upper- and a
    # lower-case letter skips snake_case and SCREAMING_CASE identifiers that start with "rb_";
    # a random 43-char token lacks either with probability ~1e-10.
    _Rule(
        "reasoningbank_token",
        ("rb_",),
        re.compile(
            _TOKEN_START + r"rb_(?=[a-z0-9_-]{0,256}[A-Z])(?=[A-Z0-9_-]{0,256}[a-z])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    # JWTs: base64url(JSON header) always starts "eyJ" ('{"').
    _Rule(
        "jwt",
        ("eyj",),
        re.compile(
            _TOKEN_START + r"eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"
        ),
    ),
    _Rule(
        "aws_secret_access_key",
        ("aws_secret_key", "secret_access_key"),
        re.compile(
            r"(?P<prefix>(?i:aws_secret_key|secret_access_key)"
            r"\\?[\"']?[ \t]{0,16}[:=][ \t]{0,16}\\?[\"']?)"
            r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
        ),
        _keep_prefix,
    ),
    # "Authorization: Bearer x", "Basic b64", JSON '"Authorization": "token x"'. Without a
    # scheme word the value must look like a token (20+ chars) so prose after
    # "authorization:" survives. The value class excludes "[" so a marker is never re-matched.
    _Rule(
        "authorization",
        ("authorization",),
        re.compile(
            r"(?P<prefix>(?<![A-Za-z0-9])(?i:authorization)\\?[\"']?[ \t]{0,16}[:=]"
            r"[ \t]{0,16}\\?[\"']?[ \t]{0,16}"
            r"(?:(?i:bearer|basic|token|digest|apikey)[ \t]{1,16}(?=[^\s\"'`\\,;<>\[\]$%{*]{8})"
            r"|(?=[^\s\"'`\\,;<>\[\]$%{*]{20})))"
            r"[^\s\"'`\\,;<>\[\]]++"
        ),
        _keep_prefix,
    ),
    # A bare "Bearer <token>" (curl snippets, logged headers without the name).
    _Rule(
        "authorization",
        ("bearer",),
        re.compile(
            r"(?P<prefix>(?<![A-Za-z0-9])[Bb]earer[ \t]{1,16})"
            r"(?=[A-Za-z0-9._~+/=-]{20})[A-Za-z0-9._~+/=-]++"
        ),
        _keep_prefix,
    ),
    # scheme://user:PASSWORD@host -> scheme://user:[REDACTED:url_password]@host. The password
    # may itself contain "@" (unencoded); the bounded greedy class backtracks to the last one.
    _Rule(
        "url_password",
        ("://",),
        re.compile(
            r"(?P<prefix>(?<=[A-Za-z0-9])://[^\s:/?#@\[\]\"'<>\\]{0,256}:)"
            r"(?!\[REDACTED)(?P<password>[^\s/?#\"'<>\\]{1,256})@(?=[A-Za-z0-9\[])"
        ),
        _url_password,
    ),
    # CLI flags: --password hunter2 (the "--password=x" form is an assignment below).
    _Rule(
        "secret_assignment",
        _CLI_FLAGS,
        re.compile(
            r"(?P<prefix>(?<![A-Za-z0-9-])(?:"
            + "|".join(flag for flag in _CLI_FLAGS)
            + r")[ \t]{1,16})(?P<value>(?![-$%{<*\[])[^\s\"'`\\]++)"
        ),
        _cli_value,
    ),
    # Generic "key = value" / "key: value" / '"key": "value"' for well-known secret key names.
    # The key name (with any prefix such as DB_ or client_) is kept so the trace stays readable.
    _Rule(
        "secret_assignment",
        ("passw", "pwd", "secret", "client", "api", "access", "auth", "refresh", "private"),
        re.compile(
            r"(?P<prefix>"
            r"(?P<key>(?<![A-Za-z0-9])(?i:password|passwd|pwd|client[_-]?secret"
            r"|secret(?:[_-]?key)?|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|refresh[_-]?token|private[_-]?key)(?![A-Za-z0-9_]))"
            r"(?P<sep>\\?[\"']?[ \t]{0,16}(?::=|=>|=(?!=)|:(?![:=]))[ \t]{0,16}))"
            r"(?:(?P<q>\\?[\"'])(?!\[REDACTED)(?P<qval>(?:(?!(?P=q))[^\\\r\n]){1,512}+)"
            r"(?=\\?[\"'])"
            r"|(?P<uval>[^\s\"'`\\,;&<>(){}\[\]|]{1,512}+)(?![(\[]))"
        ),
        _assignment,
    ),
)

SECRET_KINDS: tuple[str, ...] = tuple(
    sorted({"private_key", *(rule.kind for rule in _RULES)})
)


# ASCII-only lower-casing that never changes the string's length, for the rare text where
# str.lower() does (e.g. "İ" becomes two code points), so anchor positions stay valid.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower_same_length(text: str) -> str:
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _anchor_positions(lowered: str, anchors: tuple[str, ...]) -> list[int]:
    positions: set[int] = set()
    for anchor in anchors:
        index = lowered.find(anchor)
        while index != -1:
            positions.add(index)
            index = lowered.find(anchor, index + 1)
    return sorted(positions)


def _apply(rule: _Rule, text: str, lowered: str) -> tuple[str, int]:
    """Replace every match of ``rule`` in ``text``; matches never overlap."""
    positions = _anchor_positions(lowered, rule.anchors)
    if not positions:
        return text, 0
    marker = redaction_marker(rule.kind)
    out: list[str] = []
    done = count = 0  # text[:done] has been copied to out
    for position in positions:
        if position < done:
            continue  # inside a secret already replaced
        match = rule.pattern.match(text, position)
        if match is None:
            continue
        replacement = marker if rule.replace is None else rule.replace(match, marker)
        if replacement is None:
            continue
        out.append(text[done : match.start()])
        out.append(replacement)
        done = match.end()
        count += 1
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


def scrub_secrets(text: str) -> ScrubResult:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<kind>]``.

    Specific token formats run before the generic key-name rules, so ``API_KEY=sk-proj-...``
    is reported as an ``openai_key`` rather than a generic assignment.
    """
    kinds: set[str] = set()
    text, total = _scrub_pem(text)
    if total:
        kinds.add("private_key")
    lowered = _lower_same_length(text)
    for rule in _RULES:
        text, count = _apply(rule, text, lowered)
        if count:
            total += count
            kinds.add(rule.kind)
            lowered = _lower_same_length(text)  # positions moved
    return ScrubResult(text=text, redactions=total, kinds=tuple(sorted(kinds)))
