"""Our own tokens seen where they must never be: revoked on sight (docs/security/secret-scrubbing.md).

A ReasoningBank token (an API token ``rb_…``, an OAuth access token ``rbo_…`` or refresh token
``rbr_…``) that shows up in a text sent to the bank — a memory, a session trace, a feedback
comment, a review note, a session id, an imported file — has leaked: the text went through an
agent's context, and every token of the organization, a read-only one included, could otherwise
read it back and act with its scopes. The scrubber (``reasoningbank.scrubbing``, pure) redacts it
and hands back the raw value; the service that received the text calls ``leaked_tokens_revoke``.

* Only the row whose digest matches the raw value is touched, whatever organization it belongs to
  (a token of another organization pasted here has leaked just the same); a string that merely
  looks like a token matches no digest and revokes nothing.
* The audit row goes to the token's own organization, actor ``system``, with the operation the
  token was seen in (``seen_in``) — never the text, nor the organization that sent it.
* It runs in the caller's transaction: a write that is refused and rolled back stored nothing, and
  its revocation is rolled back with it. The services scrub before they open their transactions
  wherever they can, so a refused write still revokes (docs/security/secret-scrubbing.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model, revoke_access_token

from accounts.audit import audit_record
from accounts.models import ApiToken, OAuthTokenLink
from accounts.oauth.protocol import ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX
from accounts.tokens.services import TOKEN_PREFIX, token_digest

LEAKED = "leaked"  # the ``reason`` of the audit rows written here
RAW_MAX = 200  # longer strings are no token of ours (the bearer checks refuse them too)


def leaked_tokens_revoke(raws: Iterable[str], *, seen_in: str) -> int:
    """Revoke each of our tokens among ``raws`` that is still live; returns how many were."""
    revoked = 0
    for raw in dict.fromkeys(raws):
        if not raw or len(raw) > RAW_MAX:
            continue
        if raw.startswith(ACCESS_TOKEN_PREFIX):
            revoked += _oauth_access_token_revoke(raw, seen_in)
        elif raw.startswith(REFRESH_TOKEN_PREFIX):
            revoked += _oauth_refresh_token_revoke(raw, seen_in)
        elif raw.startswith(TOKEN_PREFIX):
            revoked += _api_token_revoke(raw, seen_in)
    return revoked


@transaction.atomic
def _api_token_revoke(raw: str, seen_in: str) -> int:
    token = ApiToken.objects.select_for_update().select_related("organization").filter(digest=token_digest(raw)).first()
    if token is None or token.revoked_at is not None:
        return 0
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit_record(
        organization=token.organization,
        actor=None,
        verb="token.revoke",
        target=token,
        data={"label": token.label, "reason": LEAKED, "seen_in": seen_in},
    )
    return 1


def _checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()  # django-oauth-toolkit's token_checksum


@transaction.atomic
def _oauth_access_token_revoke(raw: str, seen_in: str) -> int:
    access_token = get_access_token_model().objects.select_for_update().filter(token_checksum=_checksum(raw)).first()
    if access_token is None:
        return 0
    link = OAuthTokenLink.objects.select_related("connection__organization", "connection__application").filter(
        access_token_id=access_token.pk
    )
    _oauth_audit(link.first(), seen_in, "access")
    revoke_access_token(access_token)  # deletes it and revokes its refresh token
    return 1


@transaction.atomic
def _oauth_refresh_token_revoke(raw: str, seen_in: str) -> int:
    refresh_token = (
        get_refresh_token_model()
        .objects.select_for_update()
        .filter(token_checksum=_checksum(raw), revoked__isnull=True)
        .first()
    )
    if refresh_token is None:
        return 0
    link = None
    if refresh_token.access_token_id is not None:
        link = (
            OAuthTokenLink.objects.select_related("connection__organization", "connection__application")
            .filter(access_token_id=refresh_token.access_token_id)
            .first()
        )
    _oauth_audit(link, seen_in, "refresh")
    refresh_token.revoke()  # revokes it and deletes its access token
    return 1


def _oauth_audit(link: Any, seen_in: str, which: str) -> None:
    """One ``oauth.token_revoke`` row in the connection's organization. A token without a connection
    (none is issued outside the consent flow) has no organization to tell; it is revoked all the same."""
    if link is None:
        return
    connection = link.connection
    audit_record(
        organization=connection.organization,
        actor=None,
        verb="oauth.token_revoke",
        target=connection,
        data={
            "client": connection.application.name or connection.application.client_id,
            "client_id": connection.application.client_id,
            "token": which,
            "reason": LEAKED,
            "seen_in": seen_in,
        },
    )
