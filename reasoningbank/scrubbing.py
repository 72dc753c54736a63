"""Secret scrubbing for every text that enters the bank: session traces (before they are stored
and before any LLM sees them) and memories (recorded, updated, distilled, synthesized).

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
* Hand-written rules rather than a detector library (e.g. detect-secrets): those report findings
  per line (a line number and a hash) for repository scans, not spans to redact inside MB-long
  single-line JSON traces; their entropy detectors flag git SHAs, UUIDs and digests, which must
  survive here; and their regexes give no linear-time bound. New formats are one ``_Rule`` each,
  with a row in the format table test (tests/reasoningbank/test_scrubbing_formats.py).
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
# "token=...", "password=****", "AccountKey=xxxxxxxx": documentation placeholders, not secrets
_PLACEHOLDER_RE = re.compile(r"[.*xX•…#_-]+")
_PLACEHOLDER_STARTS = ("$", "%", "{", "<", "*", "[")
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
    return not value or value.startswith(_PLACEHOLDER_STARTS) or bool(_PLACEHOLDER_RE.fullmatch(value))


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
    while start > floor and text[start - 1] in _KEY_CHARS:
        start -= 1
    return start


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
    if lowered in _NOT_SECRET_WORDS or value.startswith(("$", "%", "{", "<", "*", "/", "~", "@")):
        return None
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
    # GitLab: personal, project/group (glpat-), pipeline trigger, deploy, runner, CI job, feed,
    # OAuth app, incoming-mail tokens; the newer routable form ends ".<payload>". And the legacy
    # runner registration token (GR1348941...).
    _Rule(
        "gitlab_token",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glsoat-", "gloas-", "glimt-", "gr1348941"),
        re.compile(
            _TOKEN_START + r"(?:gl(?:pat|ptt|dt|rt|cbt|ft|soat|oas|imt)-[A-Za-z0-9_-]{20,}+"
            r"(?:\.[A-Za-z0-9_-]{2,}+)?|GR1348941[A-Za-z0-9_-]{20,}+)"
        ),
    ),
    _Rule("npm_token", ("npm_",), re.compile(_TOKEN_START + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    # PyPI API tokens are macaroons: "pypi-" + base64 of a header that always reads "pypi.org"
    _Rule(
        "pypi_token",
        ("pypi-ageichlwas5vcmc",),
        re.compile(_TOKEN_START + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}+"),
    ),
    _Rule(
        "sendgrid_key",
        ("sg.",),
        re.compile(_TOKEN_START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    ),
    _Rule(
        "digitalocean_token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        re.compile(_TOKEN_START + r"do[por]_v1_[a-f0-9]{64}(?![A-Za-z0-9])"),
    ),
    _Rule(
        "shopify_token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        re.compile(_TOKEN_START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])"),
    ),
    _Rule(
        "vault_token",
        ("hvs.", "hvb.", "hvr."),
        re.compile(_TOKEN_START + r"hv[sbr]\.[A-Za-z0-9_-]{24,}+"),
    ),
    _Rule("docker_token", ("dckr_pat_",), re.compile(_TOKEN_START + r"dckr_pat_[A-Za-z0-9_-]{27,}+")),
    _Rule(
        "databricks_token",
        ("dapi",),
        re.compile(r"(?<![A-Za-z0-9_-])dapi[a-f0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9])"),
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
    # .netrc entries: "machine HOST login USER password SECRET", on one line or several.
    _Rule(
        "secret_assignment",
        ("machine", "default"),
        re.compile(
            r"(?P<prefix>(?<![A-Za-z0-9_-])(?:machine[ \t]{1,16}[^\s\\\"']{1,256}|default)"
            + _NETRC_SEP + r"login" + _NETRC_SEP + r"[^\s\\\"']{1,256}" + _NETRC_SEP + r"password" + _NETRC_SEP
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
            "passw", "pwd", "secret", "client", "api", "access", "auth", "refresh", "private",
            "token", "passphrase", "account", "shared", "pgpass",
        ),
        re.compile(
            r"(?P<prefix>"
            r"(?P<key>(?<![A-Za-z0-9])(?i:password|passwd|pwd|pgpassword|passphrase|client[_-]?secret"
            r"|secret(?:[_-]?key)?|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|refresh[_-]?token|private[_-]?key(?:[_-]?id)?|account[_-]?key"
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
    r"(?<![A-Za-z0-9_.-])(?P<command>mysql(?:dump|admin|import|check|show|slap)?|mariadb(?:-dump|-admin)?"
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


SECRET_KINDS: tuple[str, ...] = tuple(
    sorted({"private_key", "cli_password", *(rule.kind for rule in _RULES)})
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
    # last: a value the rules above replaced starts with "[" and is left alone here
    text, count = _scrub_command_lines(text)
    if count:
        total += count
        kinds.add("cli_password")
    return ScrubResult(text=text, redactions=total, kinds=tuple(sorted(kinds)))
