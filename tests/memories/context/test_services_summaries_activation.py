"""Activations of summaries (a summary served to a search or a session counts one) lock the rows they
share in id order, so two of them on overlapping summaries queue instead of deadlocking
(docs/concurrency.md): a search's written behind its answer, a ``memory_context`` inline."""

from __future__ import annotations

import pytest

from memories.context.services import summaries_activate
from memories.models import MemorySummary
from tests.factories import summary_make
from tests.slow_updates import race

pytestmark = pytest.mark.django_db(transaction=True)  # each activation commits on its own connection


def test_two_activations_of_the_same_summaries_in_different_plan_orders_do_not_deadlock(agent):
    first, second = sorted((summary_make(agent), summary_make(agent)), key=lambda s: s.pk)
    # a newer version of the first summary's row: a sequential scan now meets the second one first
    MemorySummary.objects.filter(pk=first.pk).update(activation_count=0)

    errors = race(
        lambda: summaries_activate([first.pk, second.pk]),
        "SET enable_indexscan = off; SET enable_bitmapscan = off",
        lambda: summaries_activate([first.pk, second.pk]),
        table="memories_memorysummary",
    )

    assert errors == []
    assert sorted(MemorySummary.objects.values_list("activation_count", flat=True)) == [2, 2]
