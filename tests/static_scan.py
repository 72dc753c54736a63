"""WhiteNoise's scan of the static files done once per process, not once per test client.

WhiteNoise's middleware lists every static file (``STATIC_ROOT`` and, with ``WHITENOISE_USE_FINDERS``,
every app's ``static/``) when it is built, which Django does for every test client on its first request:
an eighth of a database test's time went to it. The tests reuse the first scan made under the same
static-file settings and the same directory entries. The service itself builds its middleware once, so
it is not touched (docs/contributing.md#running-the-tests).
"""

from __future__ import annotations

import os
from typing import Any

_scans: dict[tuple[Any, ...], dict[str, Any]] = {}


def _mtime(path: Any) -> float | None:
    try:
        return os.stat(path).st_mtime
    except (OSError, TypeError):
        return None


def scan_key(settings: Any) -> tuple[Any, ...]:
    """Everything WhiteNoise's scan depends on: its settings, the static settings and when the static
    directories last had an entry added or removed."""
    names = sorted(name for name in dir(settings) if name.startswith("WHITENOISE_"))
    directories = [
        settings.STATIC_ROOT,
        *[entry[-1] if isinstance(entry, tuple) else entry for entry in settings.STATICFILES_DIRS],
    ]
    return (
        tuple((name, repr(getattr(settings, name))) for name in names),
        repr(settings.STATIC_ROOT),
        settings.STATIC_URL,
        settings.FORCE_SCRIPT_NAME,
        settings.DEBUG,
        tuple(settings.STATICFILES_FINDERS),
        tuple(settings.INSTALLED_APPS),
        tuple(_mtime(directory) for directory in directories),
    )


def whitenoise_scan_once_install() -> None:
    from django.conf import settings as django_settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    scan = WhiteNoiseMiddleware.__init__
    if getattr(scan, "once", False):
        return

    def init(self: WhiteNoiseMiddleware, get_response: Any = None, settings: Any = django_settings) -> None:
        key = scan_key(settings)
        state = _scans.get(key)
        if state is None:
            scan(self, get_response, settings)
            _scans[key] = {name: value for name, value in vars(self).items() if name != "get_response"}
            return
        vars(self).update(state)
        self.get_response = get_response

    init.once = True  # type: ignore[attr-defined]
    WhiteNoiseMiddleware.__init__ = init  # type: ignore[method-assign]
