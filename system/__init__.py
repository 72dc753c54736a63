"""The operator's app: is the service healthy, and what went wrong lately?

The probes (``/healthz``, ``/readyz``), the Prometheus scrape (``/metrics``: the process counters plus
gauges read from the database at scrape time), the dashboard's system page and its status banners.
It reads every app (queued runs and sessions, memories per tier, failed work) and nothing imports it
but the composition (``reasoningbank/urls.py``, the settings' context processor), so the kernel and
the apps never reach up to it.
"""

#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to system.
PUBLIC_MODULES: tuple[str, ...] = ()  # nothing: the operator's app reads every app and only the composition reaches it
