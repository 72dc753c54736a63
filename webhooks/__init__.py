"""Webhooks: an organization's admins subscribe an https URL to events of its bank; the worker
delivers each event signed, retries it with backoff and logs every delivery (docs/webhooks.md)."""
