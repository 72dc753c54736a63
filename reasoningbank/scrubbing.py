"""Secret scrubbing for every text that enters the bank: session traces (before they are stored
and before any LLM sees them) and memories (recorded, updated, distilled, synthesized).

Agents hand in raw transcripts: shell output, config files, HTTP logs. Those routinely contain
credentials, and a credential that reaches the database or a third-party LLM has leaked. Every
trace therefore passes through ``scrub_secrets`` first, which replaces each secret with
``[REDACTED:<kind>]`` so the trace stays readable ("the deploy failed because the
AWS key [REDACTED:aws_access_key_id] was expired") while the value is gone.

Design rules, each with a reason:

* Precision over cleverness: every pattern is anchored on a well-known token format or on an
  explicit key name, or (keys in prose, Twilio tokens) on a context word plus the value's shape,
  and has negative tests (the look-alikes of the format table). Scrubbing that mangles ordinary
  code makes the distilled memories worse, and people then turn it off.
* Linear time: traces are large (MBs) and partly attacker-controlled, so no pattern may
  backtrack catastrophically. Quantifiers are bounded or possessive, character classes do not
  overlap the text that follows them, and the constructs that span lines (PEM blocks, PuTTY key
  files) are matched with hand-written scans instead of a lazy ``.*?``; a context rule searches
  each stretch of text once however many context words it holds.
* Idempotent: ``[REDACTED:...]`` never matches any pattern, so scrubbing an already scrubbed
  trace changes nothing and counts nothing.
* Stdlib only, no Django, so it can run anywhere (API view, worker, a CLI).
* Hand-written rules rather than a detector library: detect-secrets (its maintained fork) caught
  71 of the 117 formats of the format table and left 46 of its 58 look-alikes alone, at ~20 times
  the time per MB; it reports findings per line for repository scans, not spans to redact inside
  MB-long single-line JSON traces (docs/security/secret-scrubbing.md has the figures and the
  command). New formats are one ``_Rule`` each, with a row in the format table
  (tests/reasoningbank/secret_table.py).
* Our own tokens first, and handed back (``ScrubResult.own_tokens``) so that the service that
  scrubbed a text can revoke them: a token of ours that reached the bank has leaked.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["OWN_TOKEN_KINDS", "SECRET_KINDS", "ScrubResult", "redaction_marker", "scrub_secrets"]

# ReasoningBank's own credentials: API tokens ("rb_"), OAuth access ("rbo_") and refresh ("rbr_")
# tokens. Their raw values are handed back (``ScrubResult.own_tokens``) so that the service that
# scrubbed a text can revoke them: a token that reached the bank has leaked (docs/security/secret-scrubbing.md).
OWN_TOKEN_KINDS = ("reasoningbank_oauth_token", "reasoningbank_token")


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text, how many secrets were replaced, and which kinds (sorted, unique).

    ``own_tokens``: the raw values of our own tokens that were found, in order, without repeats,
    for revocation; never logged or shown (not in ``repr``) and not part of equality.
    """

    text: str
    redactions: int
    kinds: tuple[str, ...]
    own_tokens: tuple[str, ...] = field(default=(), repr=False, compare=False)


def redaction_marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _spans_redact(text: str, spans: list[tuple[int, int]], marker: str) -> tuple[str, int]:
    """``text`` with each of ``spans`` (in order, not overlapping) replaced by ``marker``."""
    if not spans:
        return text, 0
    out: list[str] = []
    done = 0
    for span_start, span_end in spans:
        out.append(text[done:span_start])
        out.append(marker)
        done = span_end
    out.append(text[done:])
    return "".join(out), len(spans)


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


def _scrub_putty(text: str) -> tuple[str, int]:
    if _PUTTY_HEADER not in text:
        return text, 0
    marker = redaction_marker("private_key")
    out: list[str] = []
    pos = count = 0
    while (start := text.find(_PUTTY_HEADER, pos)) != -1:
        header = _PUTTY_HEADER_RE.match(text, start)
        if header is None:
            out.append(text[pos : start + len(_PUTTY_HEADER)])
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
        out.append(text[pos:start])
        out.append(marker)
        count += 1
        pos = end
    out.append(text[pos:])
    return "".join(out), count


# ----------------------------------------------------------------------------------------------
# Single-line patterns
# ----------------------------------------------------------------------------------------------


def _not_after(chars: str) -> str:
    """A look-behind: not right after one of ``chars`` (a character class body), except that a
    JSON-escaped line break or tab ("\\n", "\\t") counts as the whitespace it stands for, so a
    line of a JSON-encoded trace starts a word like a real line does."""
    return rf"(?:(?<![{chars}])|(?<=\\[nrt]))"


# Characters a token is made of; used in look-behinds so that a token inside a longer word
# ("ask-ant-...", "my_rb_...") is not treated as one.
_TOKEN_START = _not_after("A-Za-z0-9_-")
# A prefix that no word or identifier has ("ghp_", "xoxb-", "glpat-") may follow "_" or "-": a token
# pasted into an id ("run-ghp_..."), a name ("GH_TOKEN_ghp_...") is still a token. "sk-", "key-",
# "secret_", "r8_" are common word endings and keep the strict start; ours ("rb_") may follow "-" only.
_PREFIX_START = _not_after("A-Za-z0-9")
_OWN_START = _not_after("A-Za-z0-9_")
_WORD_START = _not_after("A-Za-z0-9")


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


def _keep_prefix_unless_placeholder(match: re.Match[str], marker: str) -> str | None:
    return None if _is_placeholder(match.group("value")) else match.group("prefix") + marker


def _basic_credentials(match: re.Match[str], marker: str) -> str | None:
    """base64 of "user:password" (a registry's "auth"), nothing else."""
    try:
        decoded = base64.b64decode(match.group("value"), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    return match.group("prefix") + marker if colon and user and password else None


def _authorization(match: re.Match[str], marker: str) -> str | None:
    if _is_placeholder(match.group()[match.end("prefix") - match.start() :]):
        return None  # "Bearer your-token-here", "Basic <credentials>"
    return match.group("prefix") + marker


def _url_password(match: re.Match[str], marker: str) -> str | None:
    if _is_placeholder(match.group("password")):
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
# "token=...", "password=****", "AccountKey=xxxxxxxx": documentation placeholders, not secrets
_PLACEHOLDER_RE = re.compile(r"[.*xX•…#_$%-]+")
_PLACEHOLDER_STARTS = ("{", "<", "[")
# A value that starts with "$", "%" or "*" is a placeholder only when all of it is a reference to
# something else; "$ecr3t!", "%24ecr3t" (URL-encoded) and "*Secr3t*" are passwords. References:
# ${VAR} / $(command) / $VAR in capitals / $var or $camelCase without digits / $1; printf and
# Python formats (%s, %5.2f, %(password)s), %WINDOWS_VAR%, %{template}; *args, **kwargs, *ptr.
_REFERENCE_RE = re.compile(
    r"\$\{[^}\s]{1,128}\}|\$\([^)]{0,256}\)|\$[A-Z_][A-Z0-9_]{0,63}|\$[a-z_][A-Za-z_]{0,63}|\$[0-9@*#?]"
    r"|%\([A-Za-z_][A-Za-z0-9_]{0,63}\)[sdrf]|%[-+ #0]?[0-9]{0,3}(?:\.[0-9]{1,3})?[sdifrxXeEgGc]"
    r"|%[A-Za-z_][A-Za-z0-9_]{0,63}%|%\{[^}\s]{1,128}\}|\*{1,2}[A-Za-z_][A-Za-z_]{0,63}"
)
# "your-api-key", "YOUR_TOKEN_HERE", "<replace-me>", "insert_password": written to be replaced
_PLACEHOLDER_WORDS_RE = re.compile(
    r"(?i:(?:your|insert|replace)[ _-]?[a-z0-9_ -]{0,60}|[a-z0-9_-]{0,60}[_-](?:here|placeholder)"
    r"|placeholder|replace[_-]?me|redacted|todo|tbd)"
)
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_WORDS_RE = re.compile(r"pass|pwd|secret|key|token", re.IGNORECASE)


_JSON_STRING_START_RE = re.compile(r'[:,\[][ \t]{0,16}\\?"[ \t-]{0,16}$')


def _at_line_start(text: str, start: int, *, or_string_start: bool = False) -> bool:
    """True when only indentation (or a YAML "- ") precedes ``start`` on its line; with
    ``or_string_start`` also when ``start`` opens a JSON string value (``"output": "``).

    A JSON-escaped "\\n" counts as a line break (traces are often JSON). Looks back at most
    80 characters so that many matches on one huge line stay linear.
    """
    window_start = max(0, start - 80)
    window = text[window_start:start]
    real = window.rfind("\n")
    escaped = window.rfind("\\n")
    line_start = max(real + 1 if real != -1 else -1, escaped + 2 if escaped != -1 else -1)
    if line_start == -1:
        line_start = 0
        if window_start > 0 and not or_string_start:
            return False  # no line break within 80 characters: not the start of a line
    before = window[line_start:]
    if before.strip(" \t-") == "":
        return True
    # a trace's tool output in JSON starts its first line there: '{"output": "DB_PASSWORD: x\n..."}'
    return or_string_start and _JSON_STRING_START_RE.search(before) is not None


_METAVAR_RE = re.compile(r"[A-Z][A-Z_-]*")


def _is_placeholder(value: str) -> bool:
    return (
        not value
        or value.startswith(_PLACEHOLDER_STARTS)
        or _PLACEHOLDER_RE.fullmatch(value) is not None
        or (value[0] in "$%*" and _REFERENCE_RE.fullmatch(value) is not None)
        or _PLACEHOLDER_WORDS_RE.fullmatch(value) is not None
    )


def _token_like(value: str) -> bool:
    """A value under a bare ``token`` key that looks generated rather than written.

    "token" is also an everyday word in code and prose (``max_token=1024``, ``token: the unit an
    LLM reads``, ``token = tok``), so unlike a password its value must look random: 8+ token
    characters (no spaces or other punctuation) with letters and digits, or 20+ that are not a
    plain identifier.
    """
    if len(value) < 8 or not _TOKEN_CHARS_RE.fullmatch(value):
        return False
    if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
        return True
    return len(value) >= 20 and not _IDENTIFIER_RE.fullmatch(value)


_TOKEN_CHARS_RE = re.compile(r"[A-Za-z0-9+/=_.~:-]+")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _key_start(text: str, start: int) -> int:
    """Where the whole key begins: the rules match "PASSWORD" in "DB_PASSWORD" or "TOKEN" in
    "AWS_SESSION_TOKEN"; look back (at most 64 characters) over the rest of the name."""
    floor = max(0, start - 64)
    while start > floor and text[start - 1] in _KEY_CHARS and text[start - 2 : start] not in _ESCAPED_BREAKS:
        start -= 1
    return start


_ESCAPED_BREAKS = ("\\n", "\\r", "\\t")  # in a JSON-encoded trace: the end of the previous word


_ENV_NAME_RE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _cli_value(match: re.Match[str], marker: str) -> str | None:
    if _METAVAR_RE.fullmatch(match.group("value")):
        return None  # "--password PASSWORD" in --help output is a metavar, not a password
    if _is_placeholder(match.group("value")):
        return None
    return match.group("prefix") + marker


def _assignment(match: re.Match[str], marker: str) -> str | None:
    """``password = "x"`` -> ``password = "[REDACTED:secret_assignment]"``; code is left alone."""
    bare_token = match.group("key").lower() == "token"
    if match.group("qval") is not None:
        quoted = match.group("qval")
        if _is_placeholder(quoted) or (bare_token and not _token_like(quoted)):
            return None
        return match.group("prefix") + match.group("q") + marker
    value = match.group("uval")
    lowered = value.lower()
    if lowered in _NOT_SECRET_WORDS or value.startswith(("/", "~", "@")):
        return None  # None, str, a path, a decorator
    if _is_placeholder(value) or (bare_token and not _token_like(value)):
        return None
    if _IDENTIFIER_PATH_RE.fullmatch(value):
        return None  # settings.SECRET_KEY, self.password, os.environ
    if _IDENTIFIER_RE.fullmatch(value) and (
        lowered == match.group("key").lower() or ("_" in value and _SECRET_WORDS_RE.search(value))
    ):
        return None  # password=password, api_key=new_api_key: passing a variable along
    if ":" in match.group("sep") and "=" not in match.group("sep"):
        # "key: value" unquoted is YAML only at the start of a line; elsewhere it is prose
        # ("error: password: too short") or a type annotation, which must not be mangled. An
        # environment variable's name (DB_PASSWORD, API_TOKEN) is no prose word: any position,
        # unless it is quoted, as a key in code is ('{"MYSQL_PWD": password}').
        start = _key_start(match.string, match.start())
        env_name = _ENV_NAME_RE.fullmatch(match.string[start : match.end("key")]) is not None
        quoted_key = match.group("sep").lstrip("\\")[:1] in ("'", '"')
        if quoted_key:  # a key in a dict or JSON object with a bare value: code ('"pwd": pw')
            if not _at_line_start(match.string, start):
                return None
        elif not env_name and not _at_line_start(match.string, start, or_string_start=True):
            return None
    return match.group("prefix") + marker


# whitespace between .netrc words, including JSON-escaped line breaks
_NETRC_SEP = r"(?:[ \t\r\n]|\\[rn]){1,64}"


def _netrc_password(match: re.Match[str], marker: str) -> str | None:
    if _is_placeholder(match.group("value")):
        return None
    return match.group("prefix") + marker


_CLI_FLAGS = (
    "--password", "--passwd", "--api-key", "--client-secret", "--access-token", "--auth-token",
    "--secret",
)  # fmt: skip

_RULES: tuple[_Rule, ...] = (
    # Our own tokens first, so that "Authorization: Bearer rbo_..." or "password=rb_..." reports
    # (and hands back for revocation) our token rather than a generic header or assignment.
    # API tokens: "rb_" + secrets.token_urlsafe(32); OAuth access and refresh tokens: "rbo_" and
    # "rbr_" + the same (accounts/oauth.py). Requiring both an upper- and a lower-case letter
    # skips snake_case and SCREAMING_CASE identifiers that start with "rb_"; a random 43-char
    # token lacks either with probability ~1e-10.
    _Rule(
        "reasoningbank_token",
        ("rb_",),
        re.compile(
            _OWN_START + r"rb_(?=[a-z0-9_-]{0,256}[A-Z])(?=[A-Z0-9_-]{0,256}[a-z])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    _Rule(
        "reasoningbank_oauth_token",
        ("rbo_", "rbr_"),
        re.compile(
            _OWN_START + r"rb[or]_(?=[a-z0-9_-]{0,256}[A-Z])(?=[A-Z0-9_-]{0,256}[a-z])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    # Anthropic: sk-ant-api03-..., sk-ant-admin01-..., sk-ant-oat01-...
    _Rule("anthropic_key", ("sk-ant-",), re.compile(_PREFIX_START + r"sk-ant-[A-Za-z0-9_-]{20,}+")),
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
        re.compile(_PREFIX_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    ),
    _Rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(_PREFIX_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+)"),
    ),
    # Slack: bot, user, app-level, legacy tokens, and token rotation's refresh tokens ("xoxe-1-...")
    # and rotated access tokens ("xoxe.xoxp-1-...").
    _Rule(
        "slack_token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xoxe.", "xapp-"),
        re.compile(_PREFIX_START + r"(?:xoxe\.)?(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}+"),
    ),
    _Rule(
        "google_api_key",
        ("aiza",),
        re.compile(_PREFIX_START + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ),
    # Google OAuth: a client secret ("GOCSPX-" + 28), an access token ("ya29."), a refresh token ("1//0")
    _Rule(
        "google_oauth_secret",
        ("gocspx-",),
        re.compile(_PREFIX_START + r"GOCSPX-[A-Za-z0-9_-]{24,}+"),
    ),
    _Rule(
        "google_oauth_token",
        ("ya29.", "1//0"),
        re.compile(_TOKEN_START + r"(?:ya29\.[A-Za-z0-9_-]{20,}+|1//0[A-Za-z0-9_-]{30,}+)"),
    ),
    _Rule("huggingface_token", ("hf_",), re.compile(_PREFIX_START + r"hf_[A-Za-z0-9]{34,}+")),
    _Rule(
        "aws_access_key_id",
        ("akia", "asia"),
        re.compile(_WORD_START + r"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    # JWTs: base64url(JSON header) always starts "eyJ" ('{"'). An unsigned one ("alg": "none")
    # has an empty signature ("header.payload."): it is a bearer credential all the same wherever
    # a server accepts it, so a payload that is JSON too ("eyJ") is enough, signature or not.
    _Rule(
        "jwt",
        ("eyj",),
        re.compile(
            _PREFIX_START + r"eyJ[A-Za-z0-9_-]{8,}+\.(?:eyJ[A-Za-z0-9_-]{2,}+\.[A-Za-z0-9_-]*+"
            r"|[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+)"
        ),
    ),
    # GitLab: personal, project/group (glpat-), pipeline trigger, deploy, runner, CI job, feed,
    # OAuth app, incoming-mail tokens; the newer routable form ends ".<payload>". And the legacy
    # runner registration token (GR1348941...).
    _Rule(
        "gitlab_token",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glsoat-", "gloas-", "glimt-", "gr1348941"),
        re.compile(
            _PREFIX_START + r"(?:gl(?:pat|ptt|dt|rt|cbt|ft|soat|oas|imt)-[A-Za-z0-9_-]{20,}+"
            r"(?:\.[A-Za-z0-9_-]{2,}+)?|GR1348941[A-Za-z0-9_-]{20,}+)"
        ),
    ),
    _Rule("npm_token", ("npm_",), re.compile(_PREFIX_START + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    # Prefixed tokens of other SaaS APIs an agent's tools use (docs/security/secret-scrubbing.md
    # lists them with a sample each).
    _Rule("groq_key", ("gsk_",), re.compile(_PREFIX_START + r"gsk_[A-Za-z0-9]{48,}+")),
    _Rule("xai_key", ("xai-",), re.compile(_PREFIX_START + r"xai-[A-Za-z0-9]{60,}+")),
    _Rule("perplexity_key", ("pplx-",), re.compile(_PREFIX_START + r"pplx-[A-Za-z0-9]{40,}+")),
    _Rule(
        "replicate_token",
        ("r8_",),
        re.compile(_TOKEN_START + r"r8_(?=[A-Za-z]{0,64}[0-9])[A-Za-z0-9]{30,}+(?![A-Za-z0-9_-])"),
    ),
    _Rule("linear_key", ("lin_api_",), re.compile(_PREFIX_START + r"lin_api_[A-Za-z0-9]{32,}+")),
    _Rule(
        "notion_token",
        ("ntn_", "secret_"),
        re.compile(
            _TOKEN_START + r"(?:ntn_[A-Za-z0-9]{40,}+|secret_(?=[a-z0-9]{0,64}[A-Z])(?=[A-Za-z]{0,64}[0-9])"
            r"[A-Za-z0-9]{43}(?![A-Za-z0-9_-]))"
        ),
    ),
    _Rule("atlassian_token", ("atatt3",), re.compile(_PREFIX_START + r"ATATT3[A-Za-z0-9_=-]{60,}+")),
    _Rule(
        "mailgun_key",
        ("key-",),
        re.compile(_TOKEN_START + r"key-(?=[a-z]{0,31}[0-9])[0-9a-z]{32}(?![A-Za-z0-9_-])"),
    ),
    _Rule("square_token", ("sq0atp-", "sq0csp-"), re.compile(_PREFIX_START + r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+")),
    _Rule(
        "postman_key",
        ("pmak-",),
        re.compile(_PREFIX_START + r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}(?![A-Za-z0-9])"),
    ),
    _Rule("newrelic_key", ("nrak-",), re.compile(_PREFIX_START + r"NRAK-[A-Z0-9]{27}(?![A-Za-z0-9])")),
    _Rule(
        "grafana_token",
        ("glsa_", "glc_"),
        re.compile(_PREFIX_START + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2})"),
    ),
    _Rule(
        "sentry_token",
        ("sntrys_", "sntryu_"),
        re.compile(_PREFIX_START + r"(?:sntrys_[A-Za-z0-9+/=_-]{40,}+|sntryu_[a-f0-9]{64})"),
    ),
    _Rule(
        "doppler_token",
        ("dp.st.", "dp.pt.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
        re.compile(_PREFIX_START + r"dp\.(?:st|pt|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40,}+"),
    ),
    _Rule(
        "tailscale_key",
        ("tskey-",),
        re.compile(_PREFIX_START + r"tskey-[a-z]{2,8}-[A-Za-z0-9]{6,}+-[A-Za-z0-9]{20,}+"),
    ),
    _Rule("supabase_token", ("sbp_",), re.compile(_PREFIX_START + r"sbp_[a-f0-9]{40}(?![A-Za-z0-9])")),
    _Rule("pulumi_token", ("pul-",), re.compile(_PREFIX_START + r"pul-[a-f0-9]{40}(?![A-Za-z0-9])")),
    _Rule(
        "mapbox_token",
        ("sk.eyj",),
        re.compile(_PREFIX_START + r"sk\.eyJ[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]{10,}+"),
    ),
    _Rule(
        "age_secret_key",
        ("age-secret-key-1",),
        re.compile(_PREFIX_START + r"AGE-SECRET-KEY-1[0-9A-Z]{58}(?![A-Za-z0-9])"),
    ),
    # PyPI API tokens are macaroons: "pypi-" + base64 of a header that always reads "pypi.org"
    _Rule(
        "pypi_token",
        ("pypi-ageichlwas5vcmc",),
        re.compile(_PREFIX_START + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}+"),
    ),
    _Rule(
        "sendgrid_key",
        ("sg.",),
        re.compile(_PREFIX_START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    ),
    _Rule(
        "digitalocean_token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        re.compile(_PREFIX_START + r"do[por]_v1_[a-f0-9]{64}(?![A-Za-z0-9])"),
    ),
    _Rule(
        "shopify_token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        re.compile(_PREFIX_START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])"),
    ),
    _Rule(
        "vault_token",
        ("hvs.", "hvb.", "hvr."),
        re.compile(_PREFIX_START + r"hv[sbr]\.[A-Za-z0-9_-]{24,}+"),
    ),
    _Rule("docker_token", ("dckr_pat_",), re.compile(_PREFIX_START + r"dckr_pat_[A-Za-z0-9_-]{27,}+")),
    _Rule(
        "databricks_token",
        ("dapi",),
        re.compile(_PREFIX_START + r"dapi[a-f0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9])"),
    ),
    # Incoming-webhook URLs are bearer credentials: whoever has one can post as the integration.
    # The host and path stay readable, the secret part goes.
    _Rule(
        "webhook_url",
        ("hooks.slack.com/", "discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
        re.compile(
            r"(?P<prefix>(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"|(?:discord|discordapp)\.com/api/webhooks/))"
            r"(?=[A-Za-z0-9/_-]{20})[A-Za-z0-9/_-]++"
        ),
        _keep_prefix,
    ),
    # A value under an AWS secret key's name, whatever its length (a real one has 40 characters;
    # a truncated or mistyped one is still most of a secret). "SecretAccessKey" is how the AWS
    # CLI and SDKs print it (sts assume-role, JSON credentials).
    _Rule(
        "aws_secret_access_key",
        ("aws_secret", "secret_access_key", "secretaccesskey"),
        re.compile(
            r"(?P<prefix>" + _WORD_START + r"(?i:aws_secret(?:_access)?_key|secret_?access_?key|aws_secret)"
            r"\\?[\"']?[ \t]{0,16}[:=][ \t]{0,16}\\?[\"']?)"
            r"(?P<value>[A-Za-z0-9/+=]{8,}+)(?![A-Za-z0-9_-])"
        ),
        _keep_prefix_unless_placeholder,
    ),
    # kubeconfig: a client certificate's private key, base64 of its PEM ("LS0tLS1CRUdJTi...")
    _Rule(
        "private_key",
        ("client-key-data",),
        re.compile(r"(?P<prefix>client-key-data\\?[\"']?[ \t]{0,16}:[ \t]{0,16}\\?[\"']?)[A-Za-z0-9+/]{16,}+={0,2}"),
        _keep_prefix,
    ),
    # Registry credentials in base64 of "user:password": docker/podman config.json's "auth", and
    # .npmrc's "_auth=". Only a value that decodes to "something:something" is taken, so an
    # "auth": "oauth2" or "auth": "required" elsewhere stays.
    _Rule(
        "registry_auth",
        ('"auth"', '\\"auth\\"', '\\\\\\"auth\\\\\\"', "_auth"),  # in JSON, JSON in JSON
        re.compile(
            r"(?P<prefix>(?:\\{0,3}\"auth\\{0,3}\"[ \t]{0,16}:[ \t]{0,16}\\{0,3}\""
            r"|" + _WORD_START + r"_auth[ \t]{0,16}=[ \t]{0,16}))"
            r"(?P<value>[A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9_-])"
        ),
        _basic_credentials,
    ),
    # "Authorization: Bearer x", "Basic b64", JSON '"Authorization": "token x"'. Without a
    # scheme word the value must look like a token (20+ chars) so prose after
    # "authorization:" survives. The value class excludes "[" so a marker is never re-matched.
    _Rule(
        "authorization",
        ("authorization",),
        re.compile(
            r"(?P<prefix>" + _WORD_START + r"(?i:authorization)\\?[\"']?[ \t]{0,16}[:=]"
            r"[ \t]{0,16}\\?[\"']?[ \t]{0,16}"
            r"(?:(?i:bearer|basic|token|digest|apikey)[ \t]{1,16}(?=[^\s\"'`\\,;<>\[\]$%{*]{8})"
            r"|(?=[^\s\"'`\\,;<>\[\]$%{*]{20})))"
            r"[^\s\"'`\\,;<>\[\]]++"
        ),
        _authorization,
    ),
    # A bare "Bearer <token>" (curl snippets, logged headers without the name).
    _Rule(
        "authorization",
        ("bearer",),
        re.compile(
            r"(?P<prefix>" + _WORD_START + r"[Bb]earer[ \t]{1,16})"
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
            r"(?P<prefix>"
            + _not_after("A-Za-z0-9-")
            + r"(?:"
            + "|".join(flag for flag in _CLI_FLAGS)
            + r")[ \t]{1,16})(?P<value>(?![-{<\[])[^\s\"'`\\]++)"
        ),
        _cli_value,
    ),
    # .netrc entries: "machine HOST login USER password SECRET", on one line or several.
    _Rule(
        "secret_assignment",
        ("machine", "default"),
        re.compile(
            r"(?P<prefix>"
            + _TOKEN_START
            + r"(?:machine[ \t]{1,16}[^\s\\\"']{1,256}|default)"
            + _NETRC_SEP
            + r"login"
            + _NETRC_SEP
            + r"[^\s\\\"']{1,256}"
            + _NETRC_SEP
            + r"password"
            + _NETRC_SEP
            + r")(?P<value>[^\s\\\"']{1,512}+)"
        ),
        _netrc_password,
    ),
    # Generic "key = value" / "key: value" / '"key": "value"' for well-known secret key names.
    # The key name (with any prefix such as DB_ or client_) is kept so the trace stays readable.
    # A bare "token" key takes only values that look generated (``_token_like``); "AccountKey" and
    # "SharedAccessKey" are Azure connection-string parts, "private_key_id" is a GCP service
    # account's key id, "PGPASSWORD" libpq's environment variable.
    _Rule(
        "secret_assignment",
        (
            "passw",
            "pwd",
            "secret",
            "client",
            "api",
            "access",
            "auth",
            "refresh",
            "private",
            "token",
            "passphrase",
            "account",
            "shared",
            "pgpass",
            "session",
            "identity",
        ),
        re.compile(
            r"(?P<prefix>"
            r"(?P<key>" + _WORD_START + r"(?i:password|passwd|pwd|pgpassword|passphrase|client[_-]?secret"
            r"|secret(?:[_-]?key)?|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|refresh[_-]?token|session[_-]?token|identity[_-]?token|private[_-]?key(?:[_-]?id)?|account[_-]?key"
            r"|shared[_-]?access[_-]?key|token)(?![A-Za-z0-9_]))"
            r"(?P<sep>\\?[\"']?[ \t]{0,16}(?::=|=>|=(?!=)|:(?![:=]))[ \t]{0,16}))"
            r"(?:(?P<q>\\?[\"'])(?!\[REDACTED)(?P<qval>(?:(?!(?P=q))[^\\\r\n]){1,512}+)"
            r"(?=\\?[\"'])"
            r"|(?P<uval>[^\s\"'`\\,;&<>(){}\[\]|]{1,512}+)(?![(\[]))"
        ),
        _assignment,
    ),
)


# ----------------------------------------------------------------------------------------------
# Passwords on a command line: "mysql -pSECRET", "sshpass -p SECRET", "redis-cli -a SECRET",
# "curl -u user:SECRET"
# ----------------------------------------------------------------------------------------------

# Their flags mean a password only after these commands ("-p" is a port, a path or a patch
# elsewhere), so each command is found first and its flags are read up to the end of that
# command: a line break (real or JSON-escaped), a pipe, ";" or "&", at most 1,024 characters on.
# Every character is read once by the command search and at most once more by one flag search.
_CLI_ANCHORS = ("mysql", "mariadb", "sshpass", "redis-cli", "curl")
_CLI_COMMAND_RE = re.compile(
    _not_after("A-Za-z0-9_.-") + r"(?P<command>mysql(?:dump|admin|import|check|show|slap)?|mariadb(?:-dump|-admin)?"
    r"|sshpass|redis-cli|curl)(?=[ \t])"
)
_CLI_COMMAND_END_RE = re.compile(r"[\r\n|;&]|\\n")
_CLI_COMMAND_SPAN = 1024
_CLI_VALUE = r"(?:(?P<q>['\"])(?P<qval>[^'\"\r\n\\]{1,256})(?P=q)|(?P<uval>[^\s'\"\\|;&]{1,256}+))"
_CLI_PASSWORD_FLAGS: dict[str, re.Pattern[str]] = {
    # glued only: "mysql -p dbname" prompts for the password and names a database
    "mysql": re.compile(r"[ \t]-p" + _CLI_VALUE),
    "sshpass": re.compile(r"[ \t]-p[ \t]{0,16}" + _CLI_VALUE),
    "redis-cli": re.compile(r"[ \t]-a[ \t]{1,16}" + _CLI_VALUE),
    "curl": re.compile(r"[ \t](?:-u|--user)(?:[ \t]{1,16}|=)['\"]?[^\s:'\"\\]{0,128}:(?P<uval>[^\s'\"\\]{1,256}+)"),
}


def _scrub_command_lines(text: str) -> tuple[str, int]:
    lowered = _lower_same_length(text)
    positions = _anchor_positions(lowered, _CLI_ANCHORS)
    if not positions:
        return text, 0
    marker = redaction_marker("cli_password")
    out: list[str] = []
    done = scanned = count = 0  # text[:done] is in out; commands before ``scanned`` were read
    for position in positions:
        if position < scanned:
            continue
        command = _CLI_COMMAND_RE.match(text, position)
        if command is None:
            continue
        name = command.group("command")
        family = "mysql" if name.startswith(("mysql", "mariadb")) else name
        limit = min(len(text), command.end() + _CLI_COMMAND_SPAN)
        stop = _CLI_COMMAND_END_RE.search(text, command.end(), limit)
        scanned = stop.start() if stop else limit
        for flag in _CLI_PASSWORD_FLAGS[family].finditer(text, command.end(), scanned):
            group = "qval" if flag.groupdict().get("qval") is not None else "uval"
            if _is_placeholder(flag.group(group)):
                continue
            out.append(text[done : flag.start(group)])
            out.append(marker)
            done = flag.end(group)
            count += 1
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


# ----------------------------------------------------------------------------------------------
# Formats without a prefix of their own: found from a fixed part inside them or from their context
# ----------------------------------------------------------------------------------------------

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")


def _starts_token(text: str, index: int) -> bool:
    """``text[index]`` is not inside a longer token (``_TOKEN_START`` for code that scans by hand)."""
    return index == 0 or text[index - 1] not in _TOKEN_CHARS or text[index - 2 : index] in ("\\n", "\\r", "\\t")


# Telegram bot tokens: "<bot id>:<35 characters starting with A>" ("110201543:AAHdqTcv..."), alone
# or in a Bot API URL (".../bot110201543:AAH.../sendMessage"). The scan finds ":A" with str.find,
# walks back over at most 12 digits and matches forward from there.
_TELEGRAM_SECRET_RE = re.compile(r":A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])")


def _scrub_telegram(text: str) -> tuple[str, int]:
    marker = redaction_marker("telegram_bot_token")
    out: list[str] = []
    done = count = 0
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
            out.append(text[done:start])
            out.append(marker)
            done = secret.end()
            count += 1
        index = text.find(":A", max(index + 2, done))
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


# Twilio: an auth token is 32 lower-case hex digits, which is also what an MD5 digest looks like;
# it is taken only on the same line after an Account SID ("AC" + 32 hex), an API key SID ("SK" +
# 32 hex, whose secret is 32 letters and digits) or the word "twilio" — the shape of
# Client("AC...", "<token>"), TwilioRestClient(sid, token) and "twilio token: ...". Each part of
# the text is searched once: a window starts where the previous one ended.
_TWILIO_SID_RE = re.compile(r"(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])")
_TWILIO_SECRET_RE = re.compile(
    _TOKEN_START + r"(?:[0-9a-f]{32}|(?=[a-z0-9]{0,31}[A-Z])[A-Za-z0-9]{32})(?![A-Za-z0-9_-])"
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


def _scrub_twilio(text: str, lowered: str) -> tuple[str, int]:
    if "twilio" not in lowered and "AC" not in text and "SK" not in text:
        return text, 0
    anchors = _twilio_anchors(text, lowered)
    if not anchors:
        return text, 0
    marker = redaction_marker("twilio_auth_token")
    spans: list[tuple[int, int]] = []
    searched = 0
    for _, anchor_end in anchors:
        start = max(anchor_end, searched)
        limit = min(len(text), anchor_end + _TWILIO_WINDOW)
        line_end = _LINE_END_RE.search(text, start, limit)
        end = line_end.start() if line_end else limit
        if start < end:
            for secret in _TWILIO_SECRET_RE.finditer(text, start, end):
                after = text[secret.end() : secret.end() + 1]
                if after and after in _TOKEN_CHARS:
                    continue  # cut by the window: part of a longer word
                spans.append(secret.span())
        searched = max(searched, end)
    return _spans_redact(text, spans, marker)


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
_PROSE_CONTEXT = ("key", "secret", "token", "passw", "credential", "aws")
_PROSE_BEFORE, _PROSE_AFTER = 48, 72  # characters around a context word where a run is taken
_PROSE_RUN_RE = re.compile(_not_after("A-Za-z0-9+/_.-") + r"[A-Za-z0-9+/_-]{24,}+={0,2}(?![A-Za-z0-9+/_=-])")
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


def _scrub_prose_keys(text: str, lowered: str) -> tuple[str, int]:
    positions = _anchor_positions(lowered, _PROSE_CONTEXT)
    if not positions:
        return text, 0
    marker = redaction_marker("high_entropy_secret")
    spans: list[tuple[int, int]] = []
    for start, end in _prose_windows(positions, len(text)):
        # endpos a run's length past the window, so that a run starting inside it is seen whole
        for run in _PROSE_RUN_RE.finditer(text, start, min(len(text), end + 160)):
            if run.start() >= end:
                break
            if (not spans or run.start() >= spans[-1][1]) and _prose_candidate(text, run):
                spans.append(run.span())
    return _spans_redact(text, spans, marker)


SECRET_KINDS: tuple[str, ...] = tuple(
    sorted(
        {
            "private_key", "cli_password", "telegram_bot_token", "twilio_auth_token", "high_entropy_secret",
            *(rule.kind for rule in _RULES),
        }
    )
)  # fmt: skip


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


def _apply(rule: _Rule, text: str, lowered: str, found: list[str]) -> tuple[str, int]:
    """Replace every match of ``rule`` in ``text``; matches never overlap. The raw values of our
    own tokens are appended to ``found``."""
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
        if rule.kind in OWN_TOKEN_KINDS:
            found.append(match.group())
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


def scrub_secrets(text: str) -> ScrubResult:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<kind>]``.

    Multi-line key files first, then our own tokens, then specific token formats before the
    generic key-name rules (``API_KEY=sk-proj-...`` is reported as an ``openai_key`` rather than a
    generic assignment), and the context rules for keys in prose last, when every token with a
    known shape is already a marker.
    """
    kinds: set[str] = set()
    found: list[str] = []
    total = 0

    def counted(kind: str, result: tuple[str, int]) -> str:
        nonlocal total
        if result[1]:
            total += result[1]
            kinds.add(kind)
        return result[0]

    text = counted("private_key", _scrub_pem(text))
    text = counted("private_key", _scrub_putty(text))
    lowered = _lower_same_length(text)
    for rule in _RULES:
        text, count = _apply(rule, text, lowered, found)
        if count:
            total += count
            kinds.add(rule.kind)
            lowered = _lower_same_length(text)  # positions moved
    text = counted("telegram_bot_token", _scrub_telegram(text))
    text = counted("twilio_auth_token", _scrub_twilio(text, _lower_same_length(text)))
    # after the rules: a value they replaced starts with "[" and is left alone here
    text = counted("cli_password", _scrub_command_lines(text))
    text = counted("high_entropy_secret", _scrub_prose_keys(text, _lower_same_length(text)))
    return ScrubResult(text=text, redactions=total, kinds=tuple(sorted(kinds)), own_tokens=tuple(dict.fromkeys(found)))
