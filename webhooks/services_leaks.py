"""Webhook signing secrets seen where they must never be: rotated on sight
(docs/security/secret-scrubbing.md#our-own-credentials-are-revoked-on-sight).

A subscription's secret (``whsec_…``, webhooks/signing.py) lets whoever holds it sign deliveries its
receiver will trust. One that shows up in a text sent to the bank or bound for an LLM has leaked: the
subscription gets a new secret at once (deliveries from then on are signed with it; its receiver,
still holding the old one, refuses them until an admin rotates the secret to see a new one and gives
it to the receiver), and the subscription's organization gets an audit row saying so.

Only a subscription whose secret is exactly the raw value is touched (Stripe's and Svix's signing
secrets share the prefix and match none); registered with ``reasoningbank.leaks`` when the app loads.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from accounts.services import audit_record
from webhooks import signing
from webhooks.models import WebhookSubscription

LEAKED = "leaked"
SECRET_MAX = 100  # the column's size: a longer string is no secret of ours


def leaked_webhook_secrets_revoke(raws: Sequence[str], *, seen_in: str) -> int:
    """Rotate the secret of each subscription whose secret is one of ``raws``; returns how many."""
    candidates = [raw for raw in raws if raw.startswith(signing.SECRET_PREFIX) and len(raw) <= SECRET_MAX]
    rotated = 0
    for raw in candidates:
        rotated += _rotate(raw, seen_in)
    return rotated


@transaction.atomic
def _rotate(raw: str, seen_in: str) -> int:
    # no index on the secret: subscriptions are few (20 per organization at most) and this runs only
    # when a text held something shaped like one
    subscription = (
        WebhookSubscription.objects.select_for_update().select_related("organization").filter(secret=raw).first()
    )
    if subscription is None:
        return 0
    subscription.secret = signing.secret_generate()
    subscription.save(update_fields=["secret", "updated_at"])
    audit_record(
        organization=subscription.organization,
        actor=None,
        verb="webhook.rotate_secret",
        target=subscription,
        data={"reason": LEAKED, "seen_in": seen_in},
    )
    return 1
