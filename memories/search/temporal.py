"""Time-aware relevance (docs/search.md#time-aware-relevance): what a query says about time, and how
much each candidate answers it.

Two cues, both read from the query alone (no model, no LLM):

- **A question about when** ("When did …", "How long …", "What year …", "How many weeks …"): its
  answer is a time, so a memory that states one ("yesterday", "last week", "in May", "2023", "two
  years ago") is more likely the answer than an equally on-topic memory that states none. Neither leg
  sees this: the question's "when" is a stopword to BM25 and near nothing to the embedding.
- **A named period** ("on 7 July, 2023", "in August 2023", "in 2022"): the memories recorded in that
  period (their ``created_at``) are what the query is about, whatever words they use.

Each cue that the query carries adds ``weight`` to the relevance of a candidate that meets it, and the
sum is divided by what a candidate meeting every cue would get, so relevance stays in [0, 1]:

    relevance = (fused + weight × expression + weight × period) / (1 + weight × asks_when + weight × names_period)

A query with neither cue keeps the legs' fusion unchanged. Dates in a query are read as UTC days,
months or years (the time zone of ``created_at`` as stored).

Pure functions, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
MONTH_NUMBERS: dict[str, int] = {
    **{name: n for n, name in enumerate(_MONTHS, start=1)},
    **{name[:3]: n for n, name in enumerate(_MONTHS, start=1) if name != "may"},
    "sept": 9,
}
_MONTH = r"(" + "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# the most precise first: a span one pattern took is not read again by a vaguer one
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b{_YEAR}\b")

# a question whose answer is a time or a duration
WHEN_QUESTION = re.compile(
    r"^\W*(?:when\b|since\s+when\b|how\s+long\b|how\s+many\s+(?:days|weeks|months|years)\b|"
    r"(?:in\s+|during\s+)?(?:what|which)\s+(?:year|month|week|day|date|time|season)\b)",
    re.IGNORECASE,
)
# a time stated in a memory: relative days and periods, weekdays, months, years, durations. Matched as
# words of the lower-cased text against a set (one alternation regex over ~80 candidates cost ~5 ms a
# search; the set lookup a tenth of that)
TIME_WORDS: frozenset[str] = frozenset(
    {
        "yesterday", "today", "tonight", "tomorrow", "ago", "recently", "lately", "since", "weekend", "weekends",
        "day", "days", "week", "weeks", "month", "months", "year", "years",
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        *(month for month in _MONTHS if month != "may"),  # "may" is mostly the verb
    }
)  # fmt: skip
_TIME_PHRASE = re.compile(r"\b(?:last|next|this|past|coming)\s+(?:night|morning|summer|winter|spring|fall|autumn)\b")
_TEXT_WORD = re.compile(r"[a-z]+|(?:19|20)\d\d(?!\d)")


def states_time(text: str) -> bool:
    """Whether a text states a time: one of ``TIME_WORDS``, a year (1900–2099), or "last night", "this
    morning", "next summer"…"""
    lowered = text.lower()
    for word in _TEXT_WORD.findall(lowered):
        if word in TIME_WORDS or word[0].isdigit():
            return True
    return _TIME_PHRASE.search(lowered) is not None


@dataclass(frozen=True)
class QueryTime:
    """What a query says about time: whether it asks when, and the periods it names ([start, end))."""

    asks_when: bool = False
    periods: tuple[tuple[datetime, datetime], ...] = ()

    @property
    def cues(self) -> int:
        return int(self.asks_when) + int(bool(self.periods))


@dataclass(frozen=True)
class TimeMatch:
    """How a candidate meets the query's time cues (each 0 or 1; 0 for a cue the query lacks)."""

    expression: float = 0.0  # it states a time, and the query asks when
    period: float = 0.0  # it was recorded in a period the query names


def _period(kind: str, groups: Sequence[str]) -> tuple[datetime, datetime]:
    if kind == "year":
        year = int(groups[0])
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    if kind == "month":
        number, year = MONTH_NUMBERS[groups[0].lower()], int(groups[1])
        start = datetime(year, number, 1, tzinfo=UTC)
        return start, datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    day, month, year_text = (groups[0], groups[1], groups[2]) if kind == "dmy" else (groups[1], groups[0], groups[2])
    start = datetime(int(year_text), MONTH_NUMBERS[month.lower()], int(day), tzinfo=UTC)  # ValueError: no such day
    return start, start + timedelta(days=1)


def query_periods(query: str) -> tuple[tuple[datetime, datetime], ...]:
    """The calendar periods a query names: a day ("7 July, 2023", "July 7, 2023"), a month ("August
    2023") or a year ("2022"). A month without its year, or a relative phrase ("last week"), names
    none: it needs a reference day the query does not give."""
    taken: list[tuple[int, int]] = []
    periods: list[tuple[datetime, datetime]] = []
    for kind, pattern in (
        ("dmy", _DAY_MONTH_YEAR), ("mdy", _MONTH_DAY_YEAR), ("month", _MONTH_YEAR), ("year", _YEAR_ALONE),
    ):  # fmt: skip
        for match in pattern.finditer(query):
            if any(start <= match.start() < end for start, end in taken):
                continue
            try:
                period = _period(kind, match.groups())
            except ValueError:  # "31 February, 2023": not a day
                continue
            taken.append(match.span())
            if period not in periods:
                periods.append(period)
    return tuple(periods)


def query_time(query: str) -> QueryTime:
    return QueryTime(asks_when=bool(WHEN_QUESTION.search(query)), periods=query_periods(query))


def time_match(query: QueryTime, *, text: str, created_at: datetime) -> TimeMatch:
    """Which of the query's cues a memory (its searchable text and when it was recorded) meets."""
    expression = 1.0 if query.asks_when and states_time(text) else 0.0
    period = 1.0 if any(start <= created_at < end for start, end in query.periods) else 0.0
    return TimeMatch(expression=expression, period=period)


def time_adjusted(fused: float, match: TimeMatch, query: QueryTime, weight: float) -> float:
    """The relevance after the time cues: ``(fused + weight × (expression + period)) / (1 + weight ×
    cues)``, in [0, 1] when ``fused`` is; ``fused`` itself when the query has no cue or weight is 0."""
    if weight < 0:
        raise ValueError("weight must be ≥ 0")
    if not query.cues or weight == 0:
        return fused
    return (fused + weight * (match.expression + match.period)) / (1.0 + weight * query.cues)
