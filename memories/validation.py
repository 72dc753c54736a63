"""Input validation for memories: the limits of a memory's fields, the ``*_clean`` functions that turn
a caller's value into a clean one or a 400 naming the field, the ``*_require`` checks of the caller's
rights, and the one entry every text takes into the bank (``text_scrub``: secrets redacted, our own
leaked credentials revoked).

A leaf (it imports no memories service): the record, update, signal, session, code-report and import
services all validate with these, and none of them has to import another service to do it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE
from memories.models import Memory
from reasoningbank.errors import Forbidden, InvalidInput
from reasoningbank.leaks import leaked_credentials_revoke
from reasoningbank.scrubbing import ScrubResult, scrub_secrets

TITLE_MAX = 200
DESCRIPTION_MAX = 2000
CONTENT_MAX = 20000
TAG_MAX = 50
TAGS_MAX = 20
COMMENT_MAX = 2000
SESSION_KEY_MAX = 200  # an agent's own session id (AgentSession.external_id, the ledger's session_key)
QUERY_MAX = 2000
RECORD_OUTCOMES = ("success", "failure", "mixed")
KINDS = tuple(k for k, _ in Memory.KIND_CHOICES)
WRITE_SCOPES = ("project", "team", "org")


def text_clean(value: Any, name: str, maximum: int, *, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", field=name)
    value = value.strip()
    if required and not value:
        raise InvalidInput(f"{name} is required", field=name)
    if len(value) > maximum:
        raise InvalidInput(f"{name} is too long ({len(value)} characters; at most {maximum})", field=name)
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters", field=name)
    return value


# --- secrets ------------------------------------------------------------------------------------------
# Every text that enters the bank passes through one of these two (docs/security/secret-scrubbing.md).


def text_scrub_result(text: str, *, seen_in: str) -> ScrubResult:
    """``text`` with its secrets redacted, and any of our own credentials in it (tokens, webhook signing
    secrets) revoked on sight: it reached the bank, so it has leaked. ``seen_in`` names the operation
    for the audit row."""
    result = scrub_secrets(text)
    if result.own_tokens:
        leaked_credentials_revoke(result.own_tokens, seen_in=seen_in)
    return result


def text_scrub(text: str, *, seen_in: str) -> str:
    return text_scrub_result(text, seen_in=seen_in).text


def session_key_clean(value: Any, *, required: bool = False, field: str = "session_id") -> str:
    """An agent's session id, refused (a 400 naming the field) when it holds a secret: it is stored
    and shown as it is — in the session list, the ledger, an export — so redacting part of it would
    merge unrelated sessions under one marker. Our own token in it is revoked all the same."""
    value = text_clean(value, field, SESSION_KEY_MAX, required=required)
    if value:
        found = text_scrub_result(value, seen_in=field)
        if found.redactions:
            raise InvalidInput(
                f"{field} must not hold a secret (it looks like: {', '.join(found.kinds)}); session ids are stored "
                "and shown as they are: use an id of your own, e.g. a UUID",
                field=field,
            )
    return value


def tags_clean(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags must be a list of strings", field="tags")
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag:
            continue
        if "\x00" in tag:
            raise InvalidInput("tags must not contain NUL characters", field="tags")
        if len(tag) > TAG_MAX:
            raise InvalidInput(f"tag {tag[:20].lower()!r}… is longer than {TAG_MAX} characters", field="tags")
        # scrubbed before lower-casing: a lower-cased key is still most of a key, and no longer found
        tag = text_scrub(tag, seen_in="memory")[:TAG_MAX].lower()
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > TAGS_MAX:
        raise InvalidInput(f"at most {TAGS_MAX} tags", field="tags")
    return cleaned


def choice_check(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)} (got {value!r})", field=name)
    return str(value)


def write_scope_require(principal: Principal) -> None:
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"this action needs the '{SCOPE_MEMORIES_WRITE}' scope (viewers are read-only)")
