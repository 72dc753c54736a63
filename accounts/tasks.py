"""django-q2 entry points of accounts: call services."""

from __future__ import annotations

import logging

from accounts.audit_log.services import audit_events_prune
from accounts.oauth.services import oauth_tokens_clear

logger = logging.getLogger(__name__)


def oauth_tokens_clear_expired() -> dict[str, int]:
    """Scheduled (``rb:oauth-cleartokens``): expired OAuth codes and tokens are deleted."""
    deleted = oauth_tokens_clear()
    logger.info("oauth cleartokens deleted grants=%s access_tokens=%s refresh_tokens=%s", *deleted.values())
    return deleted


def audit_retention_daily() -> dict[str, int]:
    """Scheduled (``rb:audit-retention``): audit rows older than their organization's plan keeps them are
    deleted, in batches (docs/identity.md#the-audit-log)."""
    deleted = audit_events_prune()
    logger.info("audit retention deleted %s rows (%s)", sum(deleted.values()), deleted)
    return deleted
