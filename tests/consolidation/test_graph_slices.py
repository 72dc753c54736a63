"""Which memories the stored neighbour graph probes again: fixed slices, one falling due a day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from consolidation.graph_slices import SLICES, slice_of, slices_due, slices_staggered

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
WEEK = timedelta(days=7)


def test_a_memory_always_falls_in_the_same_slice_whatever_the_process():
    assert slice_of("mem_01m803x6pfqvczxafnbxgkt2d0") == 5  # crc32, not Python's per-process salted hash


def test_memories_spread_over_every_slice():
    counts = [0] * SLICES
    for i in range(7000):
        counts[slice_of(f"mem_{i:08d}")] += 1
    assert min(counts) > 800 and max(counts) < 1200


def test_after_a_full_pass_exactly_one_slice_falls_due_each_day():
    stamps = slices_staggered(NOW, WEEK)
    assert stamps[0] == NOW
    for day in range(1, SLICES + 1):
        assert len(slices_due(stamps, NOW + timedelta(days=day), WEEK)) == day


def test_no_slice_is_due_right_after_a_full_pass():
    assert slices_due(slices_staggered(NOW, WEEK), NOW + timedelta(hours=23), WEEK) == set()


def test_a_record_that_is_not_one_time_per_slice_makes_every_slice_due():
    assert slices_due([NOW] * (SLICES - 1), NOW, WEEK) == set(range(SLICES))
    assert slices_due([], NOW, WEEK) == set(range(SLICES))
