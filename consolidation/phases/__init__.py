"""The phases of one consolidation run, one module each; each registers its step, name, place in the
cycle and counters with ``consolidation.phases.registry``, and ``consolidation.runs`` runs them in that
order. A module here that registers nothing is a helper the phases share (``conflicts``)."""

from __future__ import annotations

import importlib
import pkgutil

from consolidation.phases import registry


def phases_discover() -> None:
    """Import every module of this package, so that each registers its phase (the app's ``ready``)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "registry":
            importlib.import_module(f"{__name__}.{module.name}")
    registry.discovered_mark()
