"""Time-aware relevance, the pure part (memories/search/temporal.py, docs/search.md#time-aware-relevance):
what a query says about time, which memories meet it, and the adjusted relevance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memories.search.temporal import (
    QueryTime,
    TimeMatch,
    query_periods,
    query_time,
    states_time,
    time_adjusted,
    time_match,
)


def day(year: int, month: int, d: int) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline go to the LGBTQ support group?",
        "when is the release planned",
        "How long has Tim been playing the piano?",
        "How many weeks passed between the two adoptions?",
        "What year did John start surfing?",
        "In which month was the outage?",
        "Which week did Tim visit the UK?",
    ],
)
def test_a_question_about_a_time_or_a_duration_asks_when(question):
    assert query_time(question).asks_when


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline paint?",
        "How did the migration go?",
        "How many dogs has Maria adopted?",
        "Why did the deploy fail when the cache was cold?",  # "when" not leading the question
    ],
)
def test_other_questions_do_not_ask_when(question):
    assert not query_time(question).asks_when


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("What did Maria do on 7 July, 2023?", (day(2023, 7, 7), day(2023, 7, 8))),
        ("the book Tim finished on 8th December, 2023", (day(2023, 12, 8), day(2023, 12, 9))),
        ("Which team did John sign with on May 21, 2023?", (day(2023, 5, 21), day(2023, 5, 22))),
        ("a forest picture shared on December 1,2023", (day(2023, 12, 1), day(2023, 12, 2))),
        ("What happened in August 2023?", (day(2023, 8, 1), day(2023, 9, 1))),
        ("the outage of Dec 2023", (day(2023, 12, 1), day(2024, 1, 1))),
        ("What did James do in 2022?", (day(2022, 1, 1), day(2023, 1, 1))),
    ],
)
def test_a_named_day_month_or_year_is_a_period(text, period):
    assert query_periods(text) == (period,)


def test_a_date_is_read_once_at_its_most_precise():
    # "7 July, 2023" is a day, not also the month "July, 2023" and the year "2023"
    assert query_periods("on 7 July, 2023 and in 2022") == (
        (day(2023, 7, 7), day(2023, 7, 8)),
        (day(2022, 1, 1), day(2023, 1, 1)),
    )


@pytest.mark.parametrize("text", ["in June", "last week", "two years ago", "version 3000", "port 2023x"])
def test_a_month_without_its_year_a_relative_phrase_or_no_date_names_no_period(text):
    assert query_periods(text) == ()


def test_a_day_that_does_not_exist_still_names_its_month():
    assert query_periods("on 31 February, 2023") == ((day(2023, 2, 1), day(2023, 3, 1)),)


@pytest.mark.parametrize(
    "text",
    [
        "I went to the support group yesterday.",
        "We moved here 4 years ago",
        "Last night was great",
        "She starts in August.",
        "the 2019 release",
        "See you on Friday!",
        "Every weekend I paint.",
    ],
)
def test_a_text_naming_a_time_states_one(text):
    assert states_time(text)


@pytest.mark.parametrize(
    "text", ["I may go to the park.", "Painting is my therapy.", "port 20233 is open", "The daylight was soft."]
)
def test_a_text_without_one_states_none(text):
    assert not states_time(text)


def test_a_memory_meets_the_cues_the_query_has():
    asks = query_time("When did Caroline go to the support group?")
    assert time_match(asks, text="Caroline went there yesterday", created_at=day(2023, 5, 8)).expression == 1
    assert time_match(asks, text="Caroline went there, it was great", created_at=day(2023, 5, 8)).expression == 0
    names = query_time("What did Caroline paint in May 2023?")
    assert not names.asks_when
    inside = time_match(names, text="Caroline painted yesterday", created_at=day(2023, 5, 31))
    assert inside == TimeMatch(expression=0.0, period=1.0)  # "yesterday" counts only for a when question
    assert time_match(names, text="a painting", created_at=day(2023, 6, 1)).period == 0


def test_a_met_cue_adds_the_weight_and_the_sum_stays_within_zero_and_one():
    both = QueryTime(asks_when=True, periods=((day(2023, 1, 1), day(2024, 1, 1)),))
    assert time_adjusted(0.5, TimeMatch(1.0, 0.0), both, 0.3) == pytest.approx((0.5 + 0.3) / 1.6)
    assert time_adjusted(1.0, TimeMatch(1.0, 1.0), both, 0.3) == pytest.approx(1.0)
    assert time_adjusted(0.0, TimeMatch(0.0, 0.0), both, 0.3) == pytest.approx(0.0)
    # a met cue lifts a memory above an equally fused one that misses it
    assert time_adjusted(0.6, TimeMatch(1.0, 0.0), both, 0.3) > time_adjusted(0.6, TimeMatch(), both, 0.3)


def test_without_cues_or_weight_the_fusion_is_unchanged():
    assert time_adjusted(0.42, TimeMatch(), QueryTime(), 0.3) == 0.42
    asks = QueryTime(asks_when=True)
    assert time_adjusted(0.42, TimeMatch(expression=1.0), asks, 0.0) == 0.42
    with pytest.raises(ValueError):
        time_adjusted(0.42, TimeMatch(), asks, -0.1)
