"""Typed readers for environment variables.

Settings come from the environment only. Every reader fails loudly with the variable's name and
what was wrong, so a typo in a deployment stops the process at start-up instead of surfacing as
odd behaviour later.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false/1/0), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_list(name: str, default: Iterable[str] = ()) -> list[str]:
    """Comma-separated list; blanks dropped."""
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: Iterable[str]) -> str:
    allowed = list(choices)
    value = env_str(name, default).lower()
    if value not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def env_duration(name: str, default: str) -> float:
    """A duration like ``24h``, ``30m``, ``90s``, ``2d`` or plain seconds, returned in seconds."""
    value = env_str(name, default)
    match = _DURATION.match(value)
    if not match:
        raise ImproperlyConfigured(
            f"{name} must be a duration such as 24h, 30m, 90s or 2d; got {value!r}"
        )
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ImproperlyConfigured(f"{name} must be a positive duration; got {value!r}")
    return seconds


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be <= {maximum}, got {number}")


def settings_load_or_exit() -> None:
    """Load the Django settings now; a value they refuse ends the process with that one line, not a traceback.

    For the entry points (``manage.py``, the ASGI app uvicorn imports): a wrong value such as
    ``LLM_PROVIDER=claude`` is the operator's to fix, and the 46-line traceback through the settings
    modules buried the one line that said how (which values are valid)."""
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - reading one setting loads the whole module
    except ImproperlyConfigured as exc:
        sys.exit(f"Configuration error: {exc} (every setting: docs/configuration.md)")
