"""Relative temporal references resolved against a memory's recorded timestamp (memories/ask/temporal.py;
docs/search.md#asking-the-bank-memory_ask). Pure: no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.ask.temporal import TemporalReference, date_span, spans_agree, temporal_references, temporal_resolve

# the example throughout: recorded Monday 2023-05-08 14:30:00
RECORDED = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)


def resolved(text: str, at: datetime = RECORDED) -> list[tuple[str, str]]:
    return [(ref.original_text, ref.iso) for ref in temporal_references(text, at)]


def test_yesterday_relative_to_2023_05_08_is_2023_05_07():
    (reference,) = temporal_references("Caroline said she went to the support group yesterday", RECORDED)
    assert reference == TemporalReference("yesterday", RECORDED, date(2023, 5, 7), reference.confidence)
    assert reference.iso == "2023-05-07" and reference.confidence >= 0.9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("we deployed today", ("today", "2023-05-08")),
        ("fixed it this morning", ("this morning", "2023-05-08")),
        ("the release is tomorrow", ("tomorrow", "2023-05-09")),
        ("it broke the day before yesterday", ("the day before yesterday", "2023-05-06")),
        ("two days ago the build failed", ("two days ago", "2023-05-06")),
        ("2 days ago the build failed", ("2 days ago", "2023-05-06")),
        ("a couple of days ago", ("a couple of days ago", "2023-05-06")),
        ("a week ago we migrated", ("a week ago", "2023-05-01")),
        ("3 weeks ago", ("3 weeks ago", "2023-04-17")),
        ("we met last week", ("last week", "2023-05-01/2023-05-07")),
        ("this week", ("this week", "2023-05-08/2023-05-14")),
        ("last weekend", ("last weekend", "2023-05-06/2023-05-07")),
        ("last month the bill doubled", ("last month", "2023-04")),
        ("two months ago", ("two months ago", "2023-03")),
        ("last year we moved to Postgres", ("last year", "2022")),
        ("5 years ago", ("5 years ago", "2018")),
        ("in two days", ("in two days", "2023-05-10")),
        ("6 hours ago", ("6 hours ago", "2023-05-08")),
    ],
)
def test_each_kind_of_phrase_resolves_against_the_recorded_day(text, expected):
    assert resolved(text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # recorded on a Monday: "last Friday" / "on Friday" is the Friday before it
        ("last Friday the pager went off", ("last Friday", "2023-05-05")),
        ("on Friday the pager went off", ("on Friday", "2023-05-05")),
        # the same weekday as the recording: a week earlier, never the recorded day itself
        ("on Monday we shipped", ("on Monday", "2023-05-01")),
        ("Tuesday's outage", ("Tuesday", "2023-05-02")),
        ("next Friday", ("next Friday", "2023-05-12")),
        ("this Friday", ("this Friday", "2023-05-12")),
    ],
)
def test_weekdays_are_the_nearest_such_day_before_unless_this_or_next_says_otherwise(text, expected):
    assert resolved(text) == [expected]


def test_weekdays_are_less_certain_than_named_days():
    (weekday,) = temporal_references("on Friday", RECORDED)
    (named,) = temporal_references("yesterday", RECORDED)
    assert weekday.confidence < named.confidence


def test_month_and_year_boundaries_are_crossed_correctly():
    new_year = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    assert resolved("yesterday", new_year) == [("yesterday", "2023-12-31")]
    assert resolved("last month", new_year) == [("last month", "2023-12")]
    assert resolved("last year", new_year) == [("last year", "2023")]
    assert resolved("last week", new_year) == [("last week", "2023-12-25/2023-12-31")]
    march_first_leap = datetime(2024, 3, 1, tzinfo=UTC)
    assert resolved("yesterday", march_first_leap) == [("yesterday", "2024-02-29")]
    assert resolved("two days ago", datetime(2023, 3, 1, tzinfo=UTC)) == [("two days ago", "2023-02-27")]
    assert resolved("3 months ago", datetime(2023, 2, 15, tzinfo=UTC)) == [("3 months ago", "2022-11")]


def test_the_memorys_own_time_zone_decides_what_yesterday_is():
    late_in_tokyo = datetime(2023, 5, 8, 1, 0, tzinfo=timezone(timedelta(hours=9)))  # 2023-05-07 16:00 UTC
    assert resolved("yesterday", late_in_tokyo) == [("yesterday", "2023-05-07")]
    assert resolved("yesterday", late_in_tokyo.astimezone(UTC)) == [("yesterday", "2023-05-06")]


def test_text_without_a_reference_yields_none():
    assert temporal_references("Always set connect and read timeouts.", RECORDED) == ()
    assert temporal_resolve("the week after the wedding", RECORDED) is None
    # recurring days are no single date
    assert resolved("we deploy on Mondays") == []


def test_several_references_come_in_order_the_longest_phrase_wins_and_repeats_count_once():
    text = "Yesterday I fixed what broke the day before yesterday; yesterday evening it broke again last week style"
    assert resolved(text) == [
        ("Yesterday", "2023-05-07"),
        ("the day before yesterday", "2023-05-06"),
        ("yesterday evening", "2023-05-07"),
        ("last week", "2023-05-01/2023-05-07"),
    ]


def test_a_phrase_quoted_with_context_is_read_like_the_phrase():
    reference = temporal_resolve("went to the support group yesterday", RECORDED)
    assert reference is not None and reference.iso == "2023-05-07"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("2023-05-07", (date(2023, 5, 7), date(2023, 5, 7))),
        ("2023-05-07T00:00:00Z", (date(2023, 5, 7), date(2023, 5, 7))),
        ("May 7, 2023", (date(2023, 5, 7), date(2023, 5, 7))),
        ("7 May 2023", (date(2023, 5, 7), date(2023, 5, 7))),
        ("2023-05-01 to 2023-05-07", (date(2023, 5, 1), date(2023, 5, 7))),
        ("2023-05-01/2023-05-07", (date(2023, 5, 1), date(2023, 5, 7))),
        ("2023-04", (date(2023, 4, 1), date(2023, 4, 30))),
        ("April 2023", (date(2023, 4, 1), date(2023, 4, 30))),
        ("2022", (date(2022, 1, 1), date(2022, 12, 31))),
        ("unknown", None),
        ("2023-02-30", None),
    ],
)
def test_an_llms_date_is_read_in_the_forms_models_write(text, span):
    assert date_span(text) == span


def test_a_date_agrees_when_one_lies_within_the_other_and_not_when_it_is_beside_it():
    (last_week,) = temporal_references("last week", RECORDED)
    (yesterday,) = temporal_references("yesterday", RECORDED)
    assert spans_agree(last_week, (date(2023, 5, 1), date(2023, 5, 1)))  # a day of it
    assert spans_agree(yesterday, (date(2023, 5, 1), date(2023, 5, 31)))  # less precise, not wrong
    assert not spans_agree(yesterday, (date(2023, 5, 6), date(2023, 5, 6)))
    assert not spans_agree(last_week, (date(2023, 4, 28), date(2023, 5, 2)))  # overlapping only


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 12, 31)), st.integers(0, 400))
def test_n_days_ago_is_always_n_calendar_days_before_the_recorded_day(moment, n):
    recorded = moment.replace(tzinfo=UTC)
    (reference,) = temporal_references(f"{n} days ago", recorded)
    assert reference.resolved_date == recorded.date() - timedelta(days=n)


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 12, 31)))
def test_last_week_always_holds_seven_days_ago_and_ends_on_a_sunday(moment):
    recorded = moment.replace(tzinfo=UTC)
    (reference,) = temporal_references("last week", recorded)
    assert reference.resolved_date.weekday() == 0 and reference.end.weekday() == 6
    assert reference.resolved_date <= recorded.date() - timedelta(days=7) <= reference.end
