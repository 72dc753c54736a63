"""A run's phase timeline (consolidation/timeline.py): pure arithmetic, no database."""

from __future__ import annotations

import math

import pytest

from consolidation.phases.registry import phase_names
from consolidation.timeline import phase_colour, phase_legend, phase_timeline, seconds_text

ORDER = phase_names()


def test_phases_come_in_the_cycles_order_whatever_order_the_json_kept():
    timeline = phase_timeline({"archive": 1.0, "scan": 1.0, "judge": 2.0}, order=ORDER)
    assert [s.phase for s in timeline.segments] == ["scan", "judge", "archive"]
    assert [(s.x, s.width) for s in timeline.segments] == [(0.0, 25.0), (25.0, 50.0), (75.0, 25.0)]
    assert timeline.total == 4.0


def test_the_segments_fill_the_bar_exactly():
    timeline = phase_timeline({name: 0.1 * (i + 1) for i, name in enumerate(ORDER)}, order=ORDER)
    assert math.isclose(sum(s.width for s in timeline.segments), 100.0, abs_tol=0.01)
    last = timeline.segments[-1]
    assert math.isclose(last.x + last.width, 100.0, abs_tol=0.01)


def test_each_phase_keeps_its_colour_so_the_legend_matches_every_bar():
    alone = phase_timeline({"cluster": 1.0}, order=ORDER).segments[0]
    among = phase_timeline({"scan": 1.0, "cluster": 1.0}, order=ORDER).segments[1]
    assert alone.colour == among.colour == ORDER.index("cluster")
    colours = [s.fill for s in phase_timeline(dict.fromkeys(ORDER, 1.0), order=ORDER).segments]
    assert len(set(colours)) == len(ORDER)  # every phase its own colour
    assert phase_legend(ORDER) == list(zip(ORDER, colours, strict=True))  # the legend is the bars' key


def test_the_colours_cannot_run_out_however_many_phases_the_cycle_grows():
    order = [f"phase{i}" for i in range(40)]
    timeline = phase_timeline(dict.fromkeys(order, 1.0), order=order)
    assert len({s.colour for s in timeline.segments}) == len({s.fill for s in timeline.segments}) == 40


def test_colours_are_css_hsl_values_a_fill_attribute_takes():
    assert phase_colour(0) == "hsl(0.0, 55%, 38%)"
    assert phase_colour(1) == "hsl(137.5, 55%, 47%)"


def test_unknown_phases_come_last_and_bad_values_are_left_out():
    durations = {
        "zeta": 1.0,
        "scan": 1.0,
        "alpha": 1.0,
        "judge": "slow",
        "cluster": -1,
        "ladder": math.nan,
        "patterns": True,
    }
    timeline = phase_timeline(durations, order=ORDER)
    assert [s.phase for s in timeline.segments] == ["scan", "alpha", "zeta"]
    assert len({s.fill for s in timeline.segments}) == 3 and all(s.fill.startswith("hsl(") for s in timeline.segments)


def test_a_zero_length_phase_is_named_but_not_drawn():
    timeline = phase_timeline({"scan": 0.25, "archive": 0}, order=ORDER)
    assert [s.phase for s in timeline.drawn] == ["scan"]
    assert timeline.label == "Phase timings: scan: 0.250 s, archive: 0.000 s; total 0.250 s"


@pytest.mark.parametrize("durations", [None, {}, {"scan": 0.0}])
def test_a_run_without_time_draws_nothing(durations):
    timeline = phase_timeline(durations, order=ORDER)
    assert timeline.drawn == () and timeline.total == 0.0
    if not durations:
        assert timeline.label == "No phase timings recorded"


def test_seconds_read_as_milliseconds_below_a_minute():
    assert seconds_text(0.0042) == "0.004 s"
    assert seconds_text(59.9994) == "59.999 s"
    assert seconds_text(75.25) == "75.2 s"
