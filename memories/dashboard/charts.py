"""Chart geometry for the dashboard: inline SVG shapes computed here, drawn by the templates. Pure (no
Django): the overview's bar charts, a memory's confidence over time, and the quality report's bars
(``consolidation``'s pages use ``bar_chart`` too: one look for every bar chart)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


def bar_chart(buckets: list[Any], *, width: int = 420, height: int = 160, label_every: int = 1) -> dict[str, Any]:
    """Rectangles for a bar chart of ``Bucket`` rows; the top 14 px hold counts, the bottom 18 px
    labels (every ``label_every``-th bar's, counted from the right, so the newest week is named).

    A label is centred under its bar, except at the two ends: there it lines up with the bar's outer
    edge, since a centred label as wide as a date would run past the chart and be cut off."""
    top, bottom = 14, 18
    plot = height - top - bottom
    n = max(len(buckets), 1)
    slot = width / n
    peak = max((b.count for b in buckets), default=0) or 1
    bars = []
    for i, bucket in enumerate(buckets):
        h = round(plot * bucket.count / peak, 1)
        x = round(i * slot + slot * 0.1, 1)
        anchor, label_x = "middle", round(i * slot + slot / 2, 1)
        if n > 1 and i == 0:
            anchor, label_x = "start", x
        elif n > 1 and i == n - 1:
            anchor, label_x = "end", round(x + slot * 0.8, 1)
        bars.append(
            {
                "x": x,
                "y": round(top + plot - h, 1),
                "w": round(slot * 0.8, 1),
                "h": h,
                "cx": round(i * slot + slot / 2, 1),
                "count": bucket.count,
                "label": bucket.label if (n - 1 - i) % label_every == 0 else "",
                "label_x": label_x,
                "anchor": anchor,
                "title": f"{bucket.title or bucket.label}: {bucket.count}",
            }
        )
    return {"width": width, "height": height, "bars": bars, "base_y": top + plot, "label_y": height - 4}


def confidence_chart(
    memory: Any, signals: list[Any], *, now: datetime, width: int = 1000, height: int = 200
) -> dict[str, Any]:
    """A polyline of confidence over time: the prior at creation, then ``confidence_after`` of each
    signal (oldest first), on to ``now``. x is time, y is confidence 0..1."""
    pad_l, pad_r, pad_t, pad_b = 34, 10, 10, 22
    initial = memory.prior_alpha / (memory.prior_alpha + memory.prior_beta)
    points: list[tuple[datetime, float, str]] = [(memory.created_at, initial, "initial confidence")]
    for signal in signals:
        if signal.confidence_after is not None:
            sign = "+" if signal.positive else "−"
            points.append((signal.created_at, signal.confidence_after, f"{signal.type} {sign}"))
    # the line runs on to today at the current confidence (signals rolled up after 30 days may move it)
    events = len(points)
    points.append((max(now, points[-1][0]), memory.confidence, "now"))
    start, end = points[0][0], max(p[0] for p in points)
    span = (end - start).total_seconds()
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b
    dots = []
    for i, (when, value, what) in enumerate(points):
        if span > 0:
            fx = max(0.0, (when - start).total_seconds()) / span
        else:
            fx = i / (len(points) - 1) if len(points) > 1 else 0.0
        x = round(pad_l + fx * plot_w, 1)
        y = round(pad_t + (1 - value) * plot_h, 1)
        dots.append({"x": x, "y": y, "title": f"{when:%Y-%m-%d %H:%M} · {what} → {value:.3f}"})
    line = " ".join(f"{d['x']},{d['y']}" for d in dots)
    dots = dots[:events]  # the "now" end of the line is not an event
    grid = [{"y": round(pad_t + (1 - v) * plot_h, 1), "label": f"{v:.1f}"} for v in (0.0, 0.5, 1.0)]
    return {
        "width": width,
        "height": height,
        "points": line,
        "dots": dots,
        "grid": grid,
        "left": pad_l,
        "right": width - pad_r,
        "start": start,
        "end": end,
        "label_y": height - 6,
    }
