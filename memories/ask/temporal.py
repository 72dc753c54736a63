"""Relative temporal references, resolved deterministically (docs/search.md#asking-the-bank-memory_ask).
Pure: no Django, no clock — a reference is resolved against the timestamp of the memory it was written
in, never against today, so the same memory always gives the same dates.

A memory recorded 2023-05-08 14:30 that says "Caroline went to the support group yesterday" meant
2023-05-07. ``temporal_references`` finds such phrases in a memory's text,
``temporal_resolve`` reads one phrase (an LLM's ``original_text``), ``date_span`` reads a date an
LLM wrote, and ``spans_agree`` says whether the two fit: ``memories/ask/reasoning.py`` uses them to
check and complete the resolutions of ``memory_ask``'s LLM.

Conventions (chosen, and stated so that disagreements can be explained):
* weeks run Monday to Sunday (ISO 8601); "last week" is the previous calendar week;
* "N days/weeks ago" and "yesterday" count calendar days in the timestamp's own time zone;
* a bare or "last" weekday ("on Friday", "last Friday") is the latest such day *before* the
  recorded day: memories record what happened. "this Friday" is that day of the recorded week;
* "N months/years ago" names the calendar month/year (the exact day is not knowable);
* each reference carries a confidence: high for a single unambiguous day ("yesterday"), lower for
  calendar periods and lowest for weekdays, whose reading depends on tense and habit.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

__all__ = [
    "TemporalReference",
    "date_span",
    "spans_agree",
    "temporal_references",
    "temporal_resolve",
]


@dataclass(frozen=True)
class TemporalReference:
    """A phrase of a memory and the absolute date it means.

    ``resolved_date`` is the day meant, or the first day of the period meant ("last week": its
    Monday); ``resolved_end`` is the period's last day (None for a single day)."""

    original_text: str  # as written: "yesterday", "two days ago", "last Friday"
    memory_timestamp: datetime  # when the memory was recorded
    resolved_date: date
    confidence: float
    resolved_end: date | None = None

    @property
    def end(self) -> date:
        return self.resolved_end or self.resolved_date

    @property
    def iso(self) -> str:
        """The resolution in ISO 8601 at its precision: ``2023-05-07`` (a day), ``2023-04`` (a
        calendar month), ``2022`` (a year), ``2023-05-01/2023-05-07`` (any other period)."""
        start, end = self.resolved_date, self.end
        if start == end:
            return start.isoformat()
        if start.day == 1 and end == _month_end(start):
            return f"{start:%Y-%m}"
        if (start.month, start.day, end.month, end.day) == (1, 1, 12, 31) and start.year == end.year:
            return f"{start:%Y}"
        return f"{start.isoformat()}/{end.isoformat()}"


# --- the phrases -------------------------------------------------------------------------------------

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
}
_NUMBER = (  # longest alternatives first: "a couple of" before "a"
    r"(?P<n>\d{1,3}|a\s+couple\s+of|couple\s+of|a\s+couple|an?"
    r"|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")(?!s\b)"  # "on Mondays" recurs: no one day
_DAY_PART = r"(?:\s+(?:morning|afternoon|evening|night))?"
_LAST = r"(?:last|previous)"
_NEXT = r"(?:next|coming)"

# how sure each reading is (see the module docstring)
SURE = 0.95  # a single day named outright: today, yesterday, tomorrow
COUNTED = 0.9  # "two days ago", "last month", "last year"
PERIOD = 0.85  # "last week", "last weekend", "three years ago"
APPROXIMATE = 0.75  # "two weeks ago", "two months ago", "the past week"
WEEKDAY_NAMED = 0.75  # "last Friday", "next Friday"
WEEKDAY_THIS = 0.7  # "this Friday": before or after the recorded day, depending on the week
WEEKDAY_BARE = 0.6  # "on Friday", "Friday"

Resolver = Callable[[re.Match[str], date, datetime], tuple[date, date | None, float]]


def _number(match: re.Match[str]) -> int:
    raw = " ".join(match.group("n").lower().split())
    return int(raw) if raw.isdigit() else _NUMBERS[raw]


def _month_start(day: date, shift: int = 0) -> date:
    index = day.year * 12 + day.month - 1 + shift
    return date(index // 12, index % 12 + 1, 1)


def _month_end(day: date) -> date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def _week_start(day: date, shift: int = 0) -> date:
    return day - timedelta(days=day.weekday()) + timedelta(weeks=shift)


def _days(offset: int, confidence: float) -> Resolver:
    return lambda m, day, ts: (day + timedelta(days=offset), None, confidence)


def _ago(m: re.Match[str], day: date, ts: datetime) -> tuple[date, date | None, float]:
    n, unit = _number(m), m.group("unit").lower()
    if unit in ("minute", "hour"):
        delta = timedelta(minutes=n) if unit == "minute" else timedelta(hours=n)
        return (ts - delta).date(), None, SURE
    if unit == "day":
        return day - timedelta(days=n), None, COUNTED
    if unit == "week":  # about 7·n days: the day is the best guess, not a certainty
        return day - timedelta(weeks=n), None, APPROXIMATE
    if unit == "month":
        start = _month_start(day, -n)
        return start, _month_end(start), APPROXIMATE
    start = date(day.year - n, 1, 1)
    return start, date(day.year - n, 12, 31), PERIOD


def _in(m: re.Match[str], day: date, ts: datetime) -> tuple[date, date | None, float]:
    n, unit = _number(m), m.group("unit").lower()
    return day + timedelta(days=n * (7 if unit == "week" else 1)), None, COUNTED if unit == "day" else APPROXIMATE


def _period(m: re.Match[str], day: date, ts: datetime) -> tuple[date, date | None, float]:
    return _calendar_period(m.group("which").lower(), m.group("unit").lower(), day)


def _calendar_period(which: str, unit: str, day: date) -> tuple[date, date | None, float]:
    """The previous (``last``), current (``this``) or following (``next``) calendar week, weekend,
    month or year of ``day``."""
    shift = {"last": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
    if unit == "week":
        start = _week_start(day, shift)
        return start, start + timedelta(days=6), PERIOD
    if unit == "weekend":
        saturday = _week_start(day, shift) + timedelta(days=5)
        return saturday, saturday + timedelta(days=1), PERIOD
    if unit == "month":
        start = _month_start(day, shift)
        return start, _month_end(start), COUNTED
    return date(day.year + shift, 1, 1), date(day.year + shift, 12, 31), COUNTED


def _past(m: re.Match[str], day: date, ts: datetime) -> tuple[date, date | None, float]:
    """The days just before the recorded day ("the past week"), not a calendar period."""
    unit = m.group("unit").lower()
    length = {"week": 7, "month": 30, "year": 365}[unit]
    return day - timedelta(days=length), day - timedelta(days=1), APPROXIMATE


def _weekday(m: re.Match[str], day: date, ts: datetime) -> tuple[date, date | None, float]:
    which = (m.group("which") or "").lower()
    target = _WEEKDAYS.index(m.group("weekday").lower())
    if which == "this":
        return _week_start(day) + timedelta(days=target), None, WEEKDAY_THIS
    if which in ("next", "coming"):
        ahead = (target - day.weekday()) % 7 or 7
        return day + timedelta(days=ahead), None, WEEKDAY_NAMED
    back = (day.weekday() - target) % 7 or 7  # strictly before the recorded day
    return day - timedelta(days=back), None, WEEKDAY_NAMED if which in ("last", "previous") else WEEKDAY_BARE


# Longer phrases are listed first and win an overlap ("the day before yesterday" over "yesterday").
_PATTERNS: tuple[tuple[re.Pattern[str], Resolver], ...] = tuple(
    (re.compile(r"\b" + pattern + r"\b", re.IGNORECASE), resolver)
    for pattern, resolver in (
        (r"the\s+day\s+before\s+yesterday", _days(-2, SURE)),
        (r"the\s+day\s+after\s+tomorrow", _days(2, SURE)),
        (r"(?:earlier\s+)?today", _days(0, SURE)),
        (r"this\s+(?:morning|afternoon|evening)|tonight", _days(0, SURE)),
        (r"yesterday" + _DAY_PART, _days(-1, SURE)),
        (r"last\s+night", _days(-1, PERIOD)),
        (r"tomorrow" + _DAY_PART, _days(1, SURE)),
        (_NUMBER + r"\s+(?P<unit>minute|hour|day|week|month|year)s?\s+ago", _ago),
        (r"in\s+" + _NUMBER + r"\s+(?P<unit>day|week)s?(?!\s+ago)", _in),
        (r"(?:the\s+)?past\s+(?P<unit>week|month|year)", _past),
        (r"this\s+past\s+weekend", lambda m, day, ts: _calendar_period("last", "weekend", day)),
        (r"(?P<which>last|previous|this|next|coming)\s+(?P<unit>week|weekend|month|year)", _period),
        (r"(?:(?P<which>" + _LAST + r"|this|" + _NEXT + r"|on)\s+)?" + _WEEKDAY, _weekday),
    )
)


def temporal_references(text: str, recorded_at: datetime) -> tuple[TemporalReference, ...]:
    """Every relative temporal reference in ``text``, in order of appearance, resolved against
    ``recorded_at`` (the memory's timestamp; its own time zone decides what "yesterday" is).
    Overlapping phrases yield the longest one; repeats of a phrase meaning the same dates, one."""
    day = recorded_at.date()
    found: list[tuple[int, int, TemporalReference]] = []
    for pattern, resolver in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < other_end and other_start < end for other_start, other_end, _ in found):
                continue  # an earlier (longer) pattern already holds these words
            resolved, last, confidence = resolver(match, day, recorded_at)
            phrase = " ".join(match.group(0).split())
            reference = TemporalReference(phrase, recorded_at, resolved, confidence, last if last != resolved else None)
            found.append((start, end, reference))
    found.sort(key=lambda item: item[0])
    unique: dict[tuple[str, date, date], TemporalReference] = {}
    for _, _, reference in found:
        unique.setdefault((reference.original_text.lower(), reference.resolved_date, reference.end), reference)
    return tuple(unique.values())


def temporal_resolve(phrase: str, recorded_at: datetime) -> TemporalReference | None:
    """The reference ``phrase`` holds (the first, when it holds several), or None when it holds none
    this module reads. An LLM's ``original_text`` ("went to the group yesterday") is read this way."""
    references = temporal_references(phrase, recorded_at)
    return references[0] if references else None


# --- dates an LLM wrote ------------------------------------------------------------------------------

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTH_NAME = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_FORMS = (
    # 2023-05-07, 2023-05-07T00:00:00, 2023/05/07
    re.compile(r"(?<!\d)(?P<year>\d{4})[-/](?P<mon>\d{1,2})[-/](?P<day>\d{1,2})(?!\d)"),
    # May 7, 2023 / May 7th 2023
    re.compile(r"\b" + _MONTH_NAME + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.IGNORECASE),
    # 7 May 2023
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH_NAME + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
)
_MONTH_FORMS = (
    re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<mon>\d{1,2})(?![\d-])"),
    re.compile(r"\b" + _MONTH_NAME + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
)
_YEAR_FORM = re.compile(r"(?<![\d-])(?P<year>\d{4})(?![\d-])")


def _month_of(match: re.Match[str]) -> int:
    groups = match.groupdict()
    if groups.get("mon"):
        return int(groups["mon"])
    return _MONTHS[groups["month"].lower().rstrip(".")]


def date_span(text: str) -> tuple[date, date] | None:
    """The first and last day an LLM's ``resolved_date`` names, or None when it names no date.

    Days ("2023-05-07", "May 7, 2023", a datetime), ranges ("2023-05-01 to 2023-05-07",
    "2023-05-01/2023-05-07": from the earliest to the latest day named), calendar months
    ("2023-04", "April 2023") and years ("2022") are read."""
    days: list[date] = []
    for form in _DATE_FORMS:
        for match in form.finditer(text):
            try:
                days.append(date(int(match.group("year")), _month_of(match), int(match.group("day"))))
            except ValueError:  # "2023-02-30": not a day
                continue
    if days:
        return min(days), max(days)
    for form in _MONTH_FORMS:
        months = []
        for match in form.finditer(text):
            month = _month_of(match)
            if 1 <= month <= 12:
                months.append(date(int(match.group("year")), month, 1))
        if months:
            return min(months), _month_end(max(months))
    years = [int(match.group("year")) for match in _YEAR_FORM.finditer(text)]
    if years:
        return date(min(years), 1, 1), date(max(years), 12, 31)
    return None


def spans_agree(reference: TemporalReference, span: tuple[date, date]) -> bool:
    """Whether a date an LLM gave fits the resolver's reading: one lies within the other ("2023-05-01"
    for last week, or "2023-05" for yesterday — less precise, not wrong). A span merely overlapping,
    or beside it, does not agree."""
    first, last = span
    start, end = reference.resolved_date, reference.end
    return (start <= first and last <= end) or (first <= start and end <= last)
