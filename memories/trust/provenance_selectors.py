"""Reading provenance (docs/security/memory-poisoning.md#provenance): a memory's provenance as stored, or —
for a memory written before provenance (``{}``) — described from its older columns (origin, the user or
token that wrote it, its session); and the compact ``source`` every API and MCP memory result carries.

Every reader takes memories it has already loaded through the access layer (their ids are of the caller's
organization), and reads what it needs of them in one query, whatever their number.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import F

from accounts.access import Principal
from memories.models import Memory
from memories.trust import provenance as p
from reasoningbank.db_replica import read_rows

# a memory's own columns and those of its relations (the reviewer, the user or token that wrote it, its
# session) that its ``source`` is made of
_OWN_COLUMNS = (
    "id", "organization_id", "provenance", "trust", "reviewed_at", "origin", "created_at", "promoted_from",
    "created_by_user_id", "created_by_token_id", "source_session_id",
)  # fmt: skip
_RELATED_COLUMNS = (
    "reviewed_by__email", "created_by_user__email", "created_by_token__prefix", "created_by_token__label",
    "created_by_token__created_by_id", "created_by_token__created_by__email", "source_session__external_id",
)  # fmt: skip
_COLUMNS = _OWN_COLUMNS + _RELATED_COLUMNS
# a memory's columns a statement that reads memories loads (``only``) for ``memory_sources_annotated``
SOURCE_FIELDS = _OWN_COLUMNS


def _annotation(name: str) -> str:
    return "source_" + name.replace("__", "_")


def source_annotations() -> dict[str, F]:
    """The relations' columns as annotations of a statement that reads memories (their own columns are
    ``SOURCE_FIELDS``), so that it brings their ``source`` too: ``memory_sources_annotated`` then reads
    them without a statement of its own."""
    return {_annotation(name): F(name) for name in _RELATED_COLUMNS}


def _described(row: dict[str, Any]) -> dict[str, Any]:
    """The stored provenance, or what the older columns say (``described``)."""
    if row["provenance"]:
        return dict(row["provenance"])
    return p.provenance_described(
        origin=row["origin"],
        at=row["created_at"],
        user_email=row["created_by_user__email"] or "",
        user_id=row["created_by_user_id"],
        token_id=row["created_by_token_id"],
        token_prefix=row["created_by_token__prefix"] or "",
        token_label=row["created_by_token__label"] or "",
        token_creator_email=row["created_by_token__created_by__email"] or "",
        session_id=row["source_session_id"] or "",
        session_key=row["source_session__external_id"] or "",
        promoted_from=row["promoted_from"] or "",
    )


def _rows(memories: Iterable[Any]) -> list[dict[str, Any]]:
    by_org: dict[int, list[str]] = {}
    for memory in memories:
        by_org.setdefault(memory.organization_id, []).append(memory.id)
    rows: list[dict[str, Any]] = []
    for org_id, ids in by_org.items():  # one organization in every request; consolidation's too
        rows += _rows_of(org_id, ids)
    return rows


@functools.cache
def _rows_sql() -> str:
    """The memories' ``_COLUMNS``, written out from the models' tables: every search and recall reads the
    sources of its hits, and the ORM compiled this five-join query again for each one."""
    memory = Memory._meta
    token = memory.get_field("created_by_token").related_model._meta.db_table  # type: ignore[union-attr]
    session = memory.get_field("source_session").related_model._meta.db_table  # type: ignore[union-attr]
    user = get_user_model()._meta.db_table
    own = ", ".join(f'm."{name}"' for name in _OWN_COLUMNS)
    return (
        f"SELECT {own}, rv.email, cu.email, t.prefix, t.label, t.created_by_id, tc.email, s.external_id "
        f"FROM {memory.db_table} m "
        f"LEFT JOIN {user} rv ON rv.id = m.reviewed_by_id "
        f"LEFT JOIN {user} cu ON cu.id = m.created_by_user_id "
        f"LEFT JOIN {token} t ON t.id = m.created_by_token_id "
        f"LEFT JOIN {user} tc ON tc.id = t.created_by_id "
        f"LEFT JOIN {session} s ON s.id = m.source_session_id "
        "WHERE m.organization_id = %s AND m.id = ANY(%s)"
    )


def _rows_of(organization_id: int, ids: Sequence[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    rows = [dict(zip(_COLUMNS, row, strict=True)) for row in read_rows(_rows_sql(), [organization_id, list(ids)])]
    for row in rows:  # jsonb arrives as its text from a raw statement (Django's psycopg loader)
        if isinstance(row["provenance"], str):
            row["provenance"] = json.loads(row["provenance"])
    return rows


def _sources(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        row["id"]: p.source_compact(_described(row), trust=row["trust"], reviewed_by=row["reviewed_by__email"])
        for row in rows
    }


def memories_provenance(memories: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Each memory's provenance (stored or described), by id."""
    return {row["id"]: _described(row) for row in _rows(memories)}


def memory_sources(memories: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Each memory's compact ``source`` (``{how, by, via, at, trust, reviewed_by, label}``), by id."""
    return _sources(_rows(memories))


def memory_sources_annotated(memories: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``memory_sources`` of memories loaded with ``SOURCE_FIELDS`` and ``source_annotations()``: no query."""
    rows = [
        {
            **{name: getattr(memory, name) for name in _OWN_COLUMNS},
            **{name: getattr(memory, _annotation(name)) for name in _RELATED_COLUMNS},
        }
        for memory in memories
    ]
    return _sources(rows)


def memory_sources_of(organization_id: int, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``memory_sources`` of the memories of this organization with these ids (others are left out)."""
    return _sources(_rows_of(organization_id, ids))


def memory_source(memory: Memory) -> dict[str, Any]:
    """One memory's ``source``; no query when it has a provenance and no reviewer."""
    if memory.provenance and memory.reviewed_by_id is None:
        return p.source_compact(memory.provenance, trust=memory.trust)
    return memory_sources([memory]).get(memory.id) or p.source_compact({}, trust=memory.trust)


def memory_provenance_detail(memory: Memory) -> dict[str, Any]:
    """What the dashboard's memory page shows: the full provenance (stored or described), with the compact
    form beside it and the reviewer."""
    rows = _rows([memory])
    if not rows:
        return {}
    row = rows[0]
    provenance = _described(row)
    claimed = (provenance.get("import") or {}).get("claimed") or {}
    sources = provenance.get("sources") or []
    return {
        "provenance": provenance,
        "source": p.source_compact(provenance, trust=row["trust"], reviewed_by=row["reviewed_by__email"]),
        "reviewed_at": row["reviewed_at"],
        "described": bool(provenance.get("described")),
        "claimed_label": p.provenance_label(claimed) if claimed else "",
        "sources_more": max(0, int(provenance.get("sources_total") or 0) - len(sources)),
    }


def oauth_clients_trusted(principal: Principal) -> list[dict[str, str]]:
    """The organization's trusted OAuth clients: each ``client_id`` with its app's name ("" when no client
    of that id is registered any more)."""
    from oauth2_provider.models import get_application_model

    clients = list(principal.organization.trusted_oauth_clients or ())
    names = dict(get_application_model().objects.filter(client_id__in=clients).values_list("client_id", "name"))
    return [{"client_id": client_id, "name": names.get(client_id, "")} for client_id in clients]
