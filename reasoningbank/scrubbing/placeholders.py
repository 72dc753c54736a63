"""Values that stand for a secret without being one: documentation placeholders ("<password>",
"your-api-key", "****") and references to something else ("${DB_PASSWORD}", "%s", "*args")."""

from __future__ import annotations

import re

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


def is_placeholder(value: str) -> bool:
    return (
        not value
        or value.startswith(_PLACEHOLDER_STARTS)
        or _PLACEHOLDER_RE.fullmatch(value) is not None
        or (value[0] in "$%*" and _REFERENCE_RE.fullmatch(value) is not None)
        or _PLACEHOLDER_WORDS_RE.fullmatch(value) is not None
    )
