"""Conflict cues (docs/consolidation.md#conflict-cues): each cue on eight opposite pairs once proposed
for merging and on its own, rewordings that carry none, and properties over generated pairs (pure, no
database)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consolidation.cues import NEGATIONS, OPPOSITES, conflict_cues

# eight opposite pairs that similarity alone once proposed for merging
OPPOSITE_PAIRS = [
    ("Always retry failed payment webhooks immediately", "Never retry failed payment webhooks immediately"),
    ("Use float for money amounts", "Use decimal for money amounts"),
    ("Enable CSRF protection on webhook views", "Disable CSRF protection on webhook views"),
    ("Run migrations before deploying", "Run migrations after deploying"),
    ("Pin Node to 18", "Pin Node to 20"),
    ("Set the payment API timeout to 5 seconds", "Set the payment API timeout to 60 seconds"),
    ("Cache tax rates for one hour", "Do not cache tax rates"),
    ("Mock the clock in tests", "Never mock the clock in tests"),
]

# the same advice in other words, or with more detail: no cue
REWORDINGS = [
    (
        "Seed the random generator in test setup so failures reproduce",
        "Set a fixed random seed in tests so flaky failures can be reproduced",
    ),
    ("Don't commit secrets to git", "Never commit secrets, tokens or keys to git history"),
    (
        "Retry idempotent requests 3 times with backoff",
        "Retry idempotent requests three times with exponential backoff starting at 100 ms",
    ),
    ("Set HTTP client timeouts", "Always configure connect and read timeouts on the HTTP client"),
    ("Run the linter before pushing", "Lint your code locally before every push"),
    ("Node 18 is required", "Use v18 of Node"),
    ("Keep database transactions short", "Avoid long-running database transactions"),
]


@pytest.mark.parametrize(("a", "b"), OPPOSITE_PAIRS, ids=[a[:30] for a, _ in OPPOSITE_PAIRS])
def test_every_opposite_pair_once_proposed_for_merging_has_a_cue(a, b):
    assert conflict_cues(a, b)


@pytest.mark.parametrize(("a", "b"), REWORDINGS, ids=[a[:30] for a, _ in REWORDINGS])
def test_rewordings_and_added_detail_carry_no_cue(a, b):
    assert conflict_cues(a, b) == ()


@pytest.mark.parametrize(
    ("a", "b", "kind", "detail"),
    [
        ("Mock the clock", "Don't mock the clock", "negation", "mock"),
        ("Retry failed jobs", "Failed jobs shouldn't be retried", "negation", "retry"),
        ("Enabled caching helped", "Disable caching", "opposites", "enable / disable"),
        ("Use sync handlers", "Use async handlers", "opposites", "sync / async"),
        ("Timeout of 500 ms", "Timeout of 2 seconds", "numbers", "time: 0.5 vs 2"),
        ("Cap uploads at 10 MB", "Cap uploads at 1 GB", "numbers", "size"),
        ("Python 3.11 in CI", "Python 3.12 in CI", "numbers", "python: 3.11 vs 3.12"),
        ("Use Postgres 15", "Use Postgres v16", "numbers", "postgres: 15 vs 16"),
    ],
)
def test_each_cue_names_what_differs(a, b, kind, detail):
    cues = conflict_cues(a, b)
    assert any(c.kind == kind and detail in c.detail for c in cues), cues


def test_the_same_quantity_in_other_units_is_no_conflict():
    assert conflict_cues("Time out after 2 minutes", "Time out after 120 seconds") == ()


def test_a_negation_ends_with_its_clause():
    # "not" reaches "float" only, so "money" stays plain in both
    assert conflict_cues("Use decimal, not float, for money", "Use decimal for money amounts") == ()


sentences = st.lists(
    st.sampled_from(
        ["retry", "cache", "deploy", "webhooks", "database", "queries", "migrations", "tests", "the", "to"]
    ),
    min_size=2,
    max_size=8,
).map(" ".join)


@given(sentences)
def test_a_text_never_conflicts_with_itself(text):
    assert conflict_cues(text, text) == ()


@given(sentences, sentences)
def test_cues_are_symmetric(a, b):
    assert bool(conflict_cues(a, b)) == bool(conflict_cues(b, a))


@given(
    sentences.filter(lambda s: any(w not in ("the", "to") for w in s.split())),
    st.sampled_from(sorted(NEGATIONS - {"nor", "dont"})),
)
def test_negating_a_statement_is_always_a_cue(text, negation):
    assert conflict_cues(text, f"{negation} {text}")


@given(st.sampled_from(OPPOSITES), sentences)
def test_swapping_a_word_for_its_opposite_is_always_a_cue(pair, text):
    x, y = pair
    assert conflict_cues(f"{x} {text}", f"{y} {text}")


@given(st.integers(1, 500), st.integers(1, 500), st.sampled_from(["seconds", "ms", "minutes", "MB", "retries"]))
def test_different_amounts_of_one_unit_are_a_cue_and_equal_ones_are_not(n, m, unit):
    cues = conflict_cues(f"set it to {n} {unit}", f"set it to {m} {unit}")
    assert bool(cues) == (n != m)
