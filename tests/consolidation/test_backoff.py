"""The wait of a project whose consolidation runs keep failing (consolidation/backoff.py)."""

from __future__ import annotations

from consolidation.backoff import failure_backoff

MINUTE, DAY = 60.0, 86400.0


def test_the_wait_doubles_after_each_failure_from_the_base():
    waits = [failure_backoff(n, base=5 * MINUTE, cap=DAY) for n in range(1, 6)]

    assert waits == [300.0, 600.0, 1200.0, 2400.0, 4800.0]


def test_the_wait_never_exceeds_the_cap_however_many_failures():
    assert failure_backoff(9, base=5 * MINUTE, cap=DAY) == 5 * MINUTE * 256  # 21.3 h
    assert failure_backoff(10, base=5 * MINUTE, cap=DAY) == DAY  # 42.7 h, capped
    assert failure_backoff(10_000, base=5 * MINUTE, cap=DAY) == DAY


def test_no_failure_means_no_wait():
    assert failure_backoff(0, base=5 * MINUTE, cap=DAY) == 0.0
