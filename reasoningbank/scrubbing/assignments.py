"""Secrets found by their name: ``key = value`` / ``key: value`` / ``"key": "value"`` for well-known
secret key names, Authorization headers, passwords in URLs, ``--password`` flags and .netrc entries.

The key name stays so the text stays readable; what is left alone (code, placeholders, prose) is
decided by the value and where the key stands."""

from __future__ import annotations

import base64
import binascii
import re

from reasoningbank.scrubbing.placeholders import is_placeholder
from reasoningbank.scrubbing.primitives import TOKEN_START, WORD_START, Rule, keep_prefix, not_after


def _keep_prefix_unless_placeholder(match: re.Match[str], marker: str) -> str | None:
    return None if is_placeholder(match.group("value")) else match.group("prefix") + marker


def _basic_credentials(match: re.Match[str], marker: str) -> str | None:
    """base64 of "user:password" (a registry's "auth"), nothing else."""
    try:
        decoded = base64.b64decode(match.group("value"), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    return match.group("prefix") + marker if colon and user and password else None


def _authorization(match: re.Match[str], marker: str) -> str | None:
    if is_placeholder(match.group()[match.end("prefix") - match.start() :]):
        return None  # "Bearer your-token-here", "Basic <credentials>"
    return match.group("prefix") + marker


def _url_password(match: re.Match[str], marker: str) -> str | None:
    if is_placeholder(match.group("password")):
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
    if is_placeholder(match.group("value")):
        return None
    return match.group("prefix") + marker


def _assignment(match: re.Match[str], marker: str) -> str | None:
    """``password = "x"`` -> ``password = "[REDACTED:secret_assignment]"``; code is left alone."""
    bare_token = match.group("key").lower() == "token"
    if match.group("qval") is not None:
        quoted = match.group("qval")
        if is_placeholder(quoted) or (bare_token and not _token_like(quoted)):
            return None
        return match.group("prefix") + match.group("q") + marker
    value = match.group("uval")
    lowered = value.lower()
    if lowered in _NOT_SECRET_WORDS or value.startswith(("/", "~", "@")):
        return None  # None, str, a path, a decorator
    if is_placeholder(value) or (bare_token and not _token_like(value)):
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
    if is_placeholder(match.group("value")):
        return None
    return match.group("prefix") + marker


_CLI_FLAGS = (
    "--password", "--passwd", "--api-key", "--client-secret", "--access-token", "--auth-token",
    "--secret",
)  # fmt: skip

ASSIGNMENT_RULES: tuple[Rule, ...] = (
    # A value under an AWS secret key's name, whatever its length (a real one has 40 characters;
    # a truncated or mistyped one is still most of a secret). "SecretAccessKey" is how the AWS
    # CLI and SDKs print it (sts assume-role, JSON credentials).
    Rule(
        "aws_secret_access_key",
        ("aws_secret", "secret_access_key", "secretaccesskey"),
        re.compile(
            r"(?P<prefix>" + WORD_START + r"(?i:aws_secret(?:_access)?_key|secret_?access_?key|aws_secret)"
            r"\\?[\"']?[ \t]{0,16}[:=][ \t]{0,16}\\?[\"']?)"
            r"(?P<value>[A-Za-z0-9/+=]{8,}+)(?![A-Za-z0-9_-])"
        ),
        _keep_prefix_unless_placeholder,
    ),
    # kubeconfig: a client certificate's private key, base64 of its PEM ("LS0tLS1CRUdJTi...")
    Rule(
        "private_key",
        ("client-key-data",),
        re.compile(r"(?P<prefix>client-key-data\\?[\"']?[ \t]{0,16}:[ \t]{0,16}\\?[\"']?)[A-Za-z0-9+/]{16,}+={0,2}"),
        keep_prefix,
    ),
    # Registry credentials in base64 of "user:password": docker/podman config.json's "auth", and
    # .npmrc's "_auth=". Only a value that decodes to "something:something" is taken, so an
    # "auth": "oauth2" or "auth": "required" elsewhere stays.
    Rule(
        "registry_auth",
        ('"auth"', '\\"auth\\"', '\\\\\\"auth\\\\\\"', "_auth"),  # in JSON, JSON in JSON
        re.compile(
            r"(?P<prefix>(?:\\{0,3}\"auth\\{0,3}\"[ \t]{0,16}:[ \t]{0,16}\\{0,3}\""
            r"|" + WORD_START + r"_auth[ \t]{0,16}=[ \t]{0,16}))"
            r"(?P<value>[A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9_-])"
        ),
        _basic_credentials,
    ),
    # "Authorization: Bearer x", "Basic b64", JSON '"Authorization": "token x"'. Without a
    # scheme word the value must look like a token (20+ chars) so prose after
    # "authorization:" survives. The value class excludes "[" so a marker is never re-matched.
    Rule(
        "authorization",
        ("authorization",),
        re.compile(
            r"(?P<prefix>" + WORD_START + r"(?i:authorization)\\?[\"']?[ \t]{0,16}[:=]"
            r"[ \t]{0,16}\\?[\"']?[ \t]{0,16}"
            r"(?:(?i:bearer|basic|token|digest|apikey)[ \t]{1,16}(?=[^\s\"'`\\,;<>\[\]$%{*]{8})"
            r"|(?=[^\s\"'`\\,;<>\[\]$%{*]{20})))"
            r"[^\s\"'`\\,;<>\[\]]++"
        ),
        _authorization,
    ),
    # A bare "Bearer <token>" (curl snippets, logged headers without the name).
    Rule(
        "authorization",
        ("bearer",),
        re.compile(
            r"(?P<prefix>" + WORD_START + r"[Bb]earer[ \t]{1,16})"
            r"(?=[A-Za-z0-9._~+/=-]{20})[A-Za-z0-9._~+/=-]++"
        ),
        keep_prefix,
    ),
    # Signed URLs: whoever holds one may do what it grants until it expires. Azure SAS ("?sv=...&sig=",
    # a Service Bus "SharedAccessSignature sr=...&sig="), S3 and GCS presigned ("X-Amz-Signature=",
    # "X-Goog-Signature=", the older "&Signature="), and an S3 URL's session token. The signature goes;
    # the URL's path and other parameters stay readable.
    Rule(
        "signed_url_signature",
        ("sig=", "signature=", "x-amz-signature=", "x-goog-signature=", "x-amz-security-token="),
        re.compile(
            r"(?P<prefix>(?<=[?&;])(?i:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token)=)"
            r"(?P<value>[A-Za-z0-9%+/=_.~-]{16,}+)"
        ),
        _keep_prefix_unless_placeholder,
    ),
    # scheme://user:PASSWORD@host -> scheme://user:[REDACTED:url_password]@host. The password
    # may itself contain "@" (unencoded); the bounded greedy class backtracks to the last one.
    Rule(
        "url_password",
        ("://",),
        re.compile(
            r"(?P<prefix>(?<=[A-Za-z0-9])://[^\s:/?#@\[\]\"'<>\\]{0,256}:)"
            r"(?!\[REDACTED)(?P<password>[^\s/?#\"'<>\\]{1,256})@(?=[A-Za-z0-9\[])"
        ),
        _url_password,
    ),
    # CLI flags: --password hunter2 (the "--password=x" form is an assignment below).
    Rule(
        "secret_assignment",
        _CLI_FLAGS,
        re.compile(
            r"(?P<prefix>"
            + not_after("A-Za-z0-9-")
            + r"(?:"
            + "|".join(flag for flag in _CLI_FLAGS)
            + r")[ \t]{1,16})(?P<value>(?![-{<\[])[^\s\"'`\\]++)"
        ),
        _cli_value,
    ),
    # .netrc entries: "machine HOST login USER password SECRET", on one line or several.
    Rule(
        "secret_assignment",
        ("machine", "default"),
        re.compile(
            r"(?P<prefix>"
            + TOKEN_START
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
    Rule(
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
            r"(?P<key>" + WORD_START + r"(?i:password|passwd|pwd|pgpassword|passphrase|client[_-]?secret"
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
