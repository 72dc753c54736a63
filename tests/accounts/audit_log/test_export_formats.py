"""The audit log's file formats and the page's reading of ``data`` (accounts/audit_log/export.py, pure)."""

from __future__ import annotations

import csv
import io
import json

from accounts.audit_log.export import DETAIL_KEPT, data_lines, export_csv, export_json

EVENT = {
    "id": 7, "created_at": "2026-12-02T09:00:00+00:00", "verb": "token.create", "actor": "-cmd|calc",
    "actor_user_id": None, "actor_token_id": 3, "target_type": "apitoken", "target_id": "3", "ip": "203.0.113.7",
    "client": "@evil", "data": {"label": "=1+1", "scopes": ["admin"]},
}  # fmt: skip


def test_a_csv_cell_a_spreadsheet_would_run_as_a_formula_is_kept_as_text() -> None:
    header, row = list(csv.reader(io.StringIO("".join(export_csv([EVENT])))))
    cells = dict(zip(header, row, strict=True))
    assert cells["actor"] == "'-cmd|calc" and cells["client"] == "'@evil" and cells["actor_user_id"] == ""
    assert json.loads(cells["data"]) == {"label": "=1+1", "scopes": ["admin"]}


def test_the_json_export_is_one_document_however_many_events() -> None:
    for events in ([], [EVENT], [EVENT, EVENT]):
        document = json.loads("".join(export_json(events, organization="acme", filters={}, truncated=False)))
        assert document["events"] == events and document["organization"] == "acme"


def test_data_reads_as_short_lines_with_lists_joined_and_long_values_cut() -> None:
    lines = dict(data_lines({"rules": ["role_markup", "override_instructions"], "to": {"a": 1}, "t": "x" * 500}))
    assert lines["rules"] == "role_markup, override_instructions" and lines["to"] == '{"a": 1}'
    assert len(lines["t"]) == DETAIL_KEPT and lines["t"].endswith("…")
