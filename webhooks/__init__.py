"""Webhooks: an organization's admins subscribe an https URL to events of its bank; the worker
delivers each event signed, retries it with backoff and logs every delivery (docs/webhooks.md)."""

#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to webhooks.
PUBLIC_MODULES: tuple[str, ...] = ()  # nothing: webhooks listen to the other apps' signals, and no app knows they exist
