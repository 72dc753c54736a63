"""Signals the accounts app sends. Other apps listen (the webhooks app publishes them as events); accounts
never imports its listeners (docs/architecture.md#the-never-arrows)."""

from __future__ import annotations

from django.dispatch import Signal

# A token's (a connected app's) write rights were suspended after a burst of flagged writes
# (accounts/write_limits/services.py). Sent inside the suspending transaction, with ``organization_id``
# and ``data`` (``suspension_describe``: kind, id, label, reason, suspended_at, flagged_writes, ...);
# sender: the model (``ApiToken`` or ``OAuthConnection``).
write_suspended = Signal()

# Audit rows were written (accounts/audit.py: ``audit_record`` and ``audit_record_many``), sent inside the
# writing transaction, with ``organization_id`` and ``event_ids`` (the new rows' ids, in the order written);
# sender: ``AuditEvent``. The webhooks app streams each row as an ``audit.event`` once committed.
audit_recorded = Signal()
