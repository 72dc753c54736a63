"""The audit log as a file: CSV (one row per event, ``data`` as JSON text) or JSON (an object holding the
events), written row by row so that an export of many rows is streamed, never held in memory
(docs/identity.md#the-audit-log)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

__pure__ = True

CSV_COLUMNS = (
    "id",
    "created_at",
    "verb",
    "actor",
    "actor_user_id",
    "actor_token_id",
    "target_type",
    "target_id",
    "ip",
    "client",
    "data",
)
# a cell a spreadsheet would read as a formula (a login typed at the sign-in form, a label): quoted as text
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
EXPORT_FORMATS = ("csv", "json")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, dict) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def export_csv(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flushed() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flushed()
    for event in events:
        writer.writerow([_cell(event[column]) for column in CSV_COLUMNS])
        yield flushed()


def export_json(
    events: Iterable[dict[str, Any]], *, organization: str, filters: dict[str, str], truncated: bool
) -> Iterator[str]:
    head = {"organization": organization, "filters": filters, "truncated": truncated}
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "events": ['
    separator = "\n"
    for event in events:
        yield separator + json.dumps(event, ensure_ascii=False)
        separator = ",\n"
    yield "\n]}\n"


DETAIL_KEPT = 160  # characters of one value on the page (the export and the API keep it whole)


def data_lines(data: dict[str, Any]) -> list[tuple[str, str]]:
    """A row's ``data`` for reading on the page: one (key, text) per entry, a list as its items joined with
    commas, a mapping as compact JSON, each cut at ``DETAIL_KEPT`` characters."""
    lines = []
    for key, value in data.items():
        if isinstance(value, list | tuple):
            text = ", ".join(str(item) for item in value) or "none"
        elif isinstance(value, dict):
            text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        else:
            text = str(value)
        lines.append((str(key), text if len(text) <= DETAIL_KEPT else text[: DETAIL_KEPT - 1] + "…"))
    return lines
