"""The injected notes' source label (memories/trust/_provenance_label.py): read from a memory's provenance,
and for a memory older than provenance from who recorded it and how. No database: plain objects."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from memories.trust._provenance_label import label

CREATED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def memory(**fields: Any) -> SimpleNamespace:
    base: dict[str, Any] = {
        "provenance": {}, "origin": "recorded", "created_by_user": None, "created_by_token": None,
        "created_at": CREATED,
    }
    return SimpleNamespace(**(base | fields))


def test_a_recorded_memory_names_its_writer_client_and_day():
    provenance = {
        "v": 1, "how": "recorded", "at": "2026-11-30T10:00:00Z",
        "by": {"kind": "token", "email": "alice@acme.test", "token_prefix": "rb_ab12"},
        "client": {"transport": "mcp", "name": "claude-code", "version": "2.1.197"},
    }
    assert label(memory(provenance=provenance)) == "recorded by alice@acme.test via claude-code 2.1 · 2026-11-30"


def test_an_oauth_app_a_token_and_the_service_are_named_when_no_person_is():
    app = {"how": "recorded", "by": {"kind": "oauth", "oauth_app_name": "Cursor"}}
    token = {"how": "distilled", "by": {"kind": "token", "token_prefix": "rb_ab12", "token_label": "ci"}}
    system = {"how": "synthesised", "by": {"kind": "system"}, "at": "2026-12-01T00:00:00Z"}
    assert label(memory(provenance=app)) == "recorded by app Cursor · 2026-11-30"
    assert label(memory(provenance=token)) == "distilled by token rb_ab12 (ci) · 2026-11-30"
    assert label(memory(provenance=system)) == "synthesised by the service · 2026-12-01"


def test_a_memory_older_than_provenance_is_described_from_its_columns():
    user = SimpleNamespace(email="bob@acme.test")
    token = SimpleNamespace(prefix="rb_cd34", label="laptop")
    assert label(memory(created_by_user=user)) == "recorded by bob@acme.test · 2026-11-30"
    distilled = memory(origin="distilled", created_by_token=token)
    assert label(distilled) == "distilled by token rb_cd34 (laptop) · 2026-11-30"
    assert label(memory(origin="consolidated")) == "synthesised by consolidation · 2026-11-30"
    assert label(memory(provenance={"by": "not a mapping"})) == "recorded · 2026-11-30"
