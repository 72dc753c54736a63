"""django-q2 entry points of accounts: call services."""

from __future__ import annotations

import logging

from accounts.oauth.services import oauth_tokens_clear

logger = logging.getLogger(__name__)


def oauth_tokens_clear_expired() -> dict[str, int]:
    """Scheduled (``rb:oauth-cleartokens``): expired OAuth codes and tokens are deleted."""
    deleted = oauth_tokens_clear()
    logger.info("oauth cleartokens deleted grants=%s access_tokens=%s refresh_tokens=%s", *deleted.values())
    return deleted
