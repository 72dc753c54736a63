"""Each organization's share of the worker as plain values (reasoningbank/fair_share_policy.py): who may
start a slow task, and whose waiting work a freed slot goes to."""

from __future__ import annotations

from datetime import datetime, timedelta

from reasoningbank.fair_share_policy import Waiting, next_in_line, share_admits

T0 = datetime(2026, 1, 1, 12, 0, 0)
A, B, C = 1, 2, 3


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_below_its_share_an_organization_always_starts() -> None:
    assert share_admits(A, running={}, waiting=[A, B], cap=1)
    assert share_admits(A, running={A: 1, B: 3}, waiting=[B], cap=2)


def test_at_its_share_an_organization_waits_while_another_that_could_start_is_waiting() -> None:
    assert not share_admits(A, running={A: 1}, waiting=[A, B], cap=1)


def test_alone_an_organization_uses_every_free_slot() -> None:
    assert share_admits(A, running={A: 3}, waiting=[A], cap=1)


def test_another_organization_that_is_itself_at_its_share_does_not_hold_one_back() -> None:
    # B waits too, but B could not start either: the slot would stay empty for nobody
    assert share_admits(A, running={A: 1, B: 1}, waiting=[A, B], cap=1)
    assert not share_admits(A, running={A: 1, B: 1}, waiting=[A, B, C], cap=1)


def test_a_freed_slot_goes_to_the_organization_running_the_least_then_the_one_waiting_longest() -> None:
    waiting = [
        Waiting(A, at(0), "session", "a1"),
        Waiting(A, at(1), "session", "a2"),
        Waiting(B, at(5), "session", "b1"),
        Waiting(C, at(3), "consolidation_run", "c1"),
    ]
    order = next_in_line(waiting, running={A: 2, C: 0, B: 0}, cap=1, limit=3)
    assert [w.item_id for w in order] == ["c1", "b1", "a1"]  # one per organization, its oldest first


def test_an_organization_held_back_still_gets_the_slot_when_nobody_else_waits() -> None:
    waiting = [Waiting(A, at(1), "session", "a2"), Waiting(A, at(0), "session", "a1")]
    assert [w.item_id for w in next_in_line(waiting, running={A: 4}, cap=1, limit=1)] == ["a1"]


def test_nothing_waiting_hands_on_nothing() -> None:
    assert next_in_line([], running={A: 1}, cap=1, limit=5) == []
    assert next_in_line([Waiting(A, T0, "session", "a1")], running={}, cap=1, limit=0) == []


def test_the_organization_whose_task_just_ended_goes_after_the_others_so_turns_go_round() -> None:
    waiting = [Waiting(A, at(0), "session", "a2"), Waiting(B, at(9), "session", "b1")]
    assert [w.item_id for w in next_in_line(waiting, running={}, cap=1, limit=2, just_served=A)] == ["b1", "a2"]
    assert [w.item_id for w in next_in_line(waiting, running={}, cap=1, limit=2)] == ["a2", "b1"]
