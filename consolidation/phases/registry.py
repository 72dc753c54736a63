"""The registry of consolidation phases: the one place the cycle's phases are known.

Each phase module of ``consolidation/phases/`` registers its step with ``phase_register``: its name
(the run's ``phase`` column, its ``consolidation.<name>`` span, its key in ``phase_durations``), its
place in the cycle (``order``: the steps run from the lowest number up; the numbers leave gaps so a new
phase slots in between two without renumbering), a one-line description, and the run counters it owns.
``consolidation.phases.phases_discover`` imports every module of the package when the app is ready,
so a new phase is one new module and nothing else.

Everything that lists phases or counters derives from here: the run (``consolidation.runs``: order,
progress), a new run's counters (``consolidation.models.empty_counters``), the run page (counter order
and the dry run's wording), the Prometheus counters (``consolidation.metrics``), the system page's
timeline and its legend (``consolidation.timeline``), and ``bench/consolidate.py``'s table.

A counter may be added to by several phases (``archived``: duplicates, synthesis, the judge and stale
archival all archive); it is declared once, by the phase it is named after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


@dataclass(frozen=True)
class RunCounter:
    """One key of ``ConsolidationRun.counters``."""

    key: str
    # the Prometheus counter ``reasoningbank_consolidation_<metric>_total`` it feeds ("" for none)
    metric: str = ""
    help: str = ""  # the metric's help text
    dry_run_label: str = ""  # how a dry run's page names it ("Would archive"); "" keeps the key's words


@dataclass(frozen=True)
class Phase:
    name: str
    order: int
    description: str
    step: Callable[[Any], None]  # step(state: consolidation.run_state.RunState)
    counters: tuple[RunCounter, ...] = ()


class RegistryError(Exception):
    """Two phases with one name or one place in the cycle, or one counter declared twice."""


_PHASES: dict[str, Phase] = {}
_discovered = False


def phase_register(
    *, name: str, order: int, description: str, counters: tuple[RunCounter, ...] = ()
) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register the decorated ``step(state)`` as the phase ``name`` at ``order`` in the cycle."""

    def register(step: Callable[[Any], None]) -> Callable[[Any], None]:
        phase = Phase(name=name, order=order, description=description, step=step, counters=tuple(counters))
        known = _PHASES.get(name)
        if known is not None and (known.step.__module__, known.step.__qualname__) != (
            step.__module__,
            step.__qualname__,
        ):
            raise RegistryError(f"two consolidation phases are named {name!r}")
        clash = [p.name for p in _PHASES.values() if p.order == order and p.name != name]
        if clash:
            raise RegistryError(f"phases {clash[0]!r} and {name!r} both take place {order} in the cycle")
        taken = {c.key: p.name for p in _PHASES.values() if p.name != name for c in p.counters}
        for counter in phase.counters:
            if counter.key in taken:
                raise RegistryError(f"counter {counter.key!r} is declared by {taken[counter.key]!r} and {name!r}")
        _PHASES[name] = phase  # a module imported again (a reload) registers its phase again
        return step

    return register


def phase_unregister(name: str) -> None:
    """Forget the phase ``name`` (a test's phase, or one a deployment turns off); unknown names are ignored."""
    _PHASES.pop(name, None)


def discovered_mark() -> None:
    """Called by ``consolidation.phases.phases_discover`` once every phase module is imported."""
    global _discovered
    _discovered = True


def phases() -> tuple[Phase, ...]:
    """Every phase, in the cycle's order."""
    if not _discovered:
        # asked before the app was ready: an answer now would silently miss phases
        raise RegistryError("the consolidation phases are not discovered yet (consolidation.phases.phases_discover)")
    return tuple(sorted(_PHASES.values(), key=lambda p: p.order))


def phase_names() -> tuple[str, ...]:
    return tuple(p.name for p in phases())


def run_counters() -> tuple[RunCounter, ...]:
    """Every counter of a run, in the order of the phases that declare them."""
    return tuple(c for p in phases() for c in p.counters)


def counters_empty() -> dict[str, int]:
    """A new run's counters: every key at zero, in the cycle's order."""
    return {c.key: 0 for c in run_counters()}
