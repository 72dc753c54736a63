"""A consolidation run's phase timeline: one horizontal bar split into its phases, from the seconds
per phase the run stored (``ConsolidationRun.phase_durations``). Drawn on the dashboard's system page
as inline SVG; pure (no Django), so its arithmetic is tested without a database.

Colours are generated, not picked from a fixed palette: phase ``i`` of the cycle's order gets the hue
``i`` golden angles (≈137.5°) round the colour wheel and one of three lightnesses, so any number of
phases get colours of their own (the palette cannot run out), neighbours in the cycle never look
alike, and the same phase has the same colour on every bar and in the legend. They are SVG ``fill``
attributes, which the Content-Security-Policy (no inline styles) allows.

Each bar is the run's own whole (its phases' shares of its total), not a common time axis: runs of a
page range from a fraction of a second to minutes, and on a shared axis every short run would be a
sliver whose phases cannot be seen. The total in seconds is written beside the bar instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

GOLDEN_ANGLE = 137.50776405003785  # degrees: 360 × (1 − 1/φ), successive hues as far apart as they can be
SATURATION = 55  # percent
# percent, in turn: two phases whose hues come close (the 1st and the 9th are 20° apart) differ in lightness
LIGHTNESS = (38, 47, 56)


def phase_colour(index: int) -> str:
    """The colour of the ``index``-th phase of the cycle: a CSS ``hsl()`` value."""
    return f"hsl({index * GOLDEN_ANGLE % 360:.1f}, {SATURATION}%, {LIGHTNESS[index % len(LIGHTNESS)]}%)"


@dataclass(frozen=True)
class Segment:
    phase: str
    seconds: float
    x: float  # where the segment starts, in percent of the bar
    width: float  # percent of the bar
    colour: int  # the phase's colour index (its place in the cycle), so the legend matches every bar

    @property
    def fill(self) -> str:
        return phase_colour(self.colour)

    @property
    def label(self) -> str:
        return f"{self.phase}: {seconds_text(self.seconds)}"


@dataclass(frozen=True)
class Timeline:
    segments: tuple[Segment, ...]  # every phase with a duration, in the run's order (zero-length ones too)
    total: float  # seconds, the sum of the phases

    @property
    def drawn(self) -> tuple[Segment, ...]:
        """The segments wide enough to draw (a zero-second phase is only named in the label)."""
        return tuple(s for s in self.segments if s.width > 0)

    @property
    def label(self) -> str:
        """What a screen reader hears, and the bar's tooltip: every phase with its seconds."""
        if not self.segments:
            return "No phase timings recorded"
        parts = ", ".join(s.label for s in self.segments)
        return f"Phase timings: {parts}; total {seconds_text(self.total)}"


def seconds_text(seconds: float) -> str:
    """Seconds to three decimals below a minute (phases are often milliseconds), then one decimal."""
    return f"{seconds:.3f} s" if seconds < 60 else f"{seconds:.1f} s"


def _seconds(value: Any) -> float | None:
    # the column is JSON: anything but a finite, non-negative number is not a duration
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def phase_legend(order: Sequence[str]) -> list[tuple[str, str]]:
    """(phase, colour) for every phase of the cycle, in its order: the key to every bar."""
    return [(name, phase_colour(i)) for i, name in enumerate(order)]


def phase_timeline(durations: Mapping[str, Any] | None, *, order: Sequence[str]) -> Timeline:
    """The bar of one run. Phases come in ``order`` (the cycle's own; JSON objects in PostgreSQL do not
    keep key order), unknown names after them alphabetically; values that are not durations are left out."""
    known = {name: i for i, name in enumerate(order)}
    rows = [(name, s) for name, value in (durations or {}).items() if (s := _seconds(value)) is not None]
    rows.sort(key=lambda row: (known.get(row[0], len(known)), row[0]))
    total = sum(seconds for _, seconds in rows)
    segments: list[Segment] = []
    x = 0.0
    for name, seconds in rows:
        width = 100.0 * seconds / total if total > 0 else 0.0
        # an unknown phase (a run stored before a phase was renamed) still gets a colour of its own
        colour = known[name] if name in known else len(known) + sum(map(ord, name))
        segments.append(Segment(name, seconds, round(x, 3), round(width, 3), colour))
        x += width
    return Timeline(tuple(segments), total)
