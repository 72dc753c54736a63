"""An import file as a whole (the format's lines are ``memories/transfer/export_format.py``'s), free of
Django: the checks across lines (``ImportChecker``: unique ids, references that resolve, the ``end``
line's counts) and the id remapping of an import (``IdMap`` and ``*_remap``). Every id in a file is
local to it; an import gives each memory and summary a new id and rewrites every reference
(``consolidated_into``, link ends, signals, summaries and their sources, the session ledger)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memories.transfer.export_format import (
    COUNTED_TYPES,
    HEADER_EXAMPLE,
    MAX_ERRORS,
    SUPPORTED_VERSIONS,
    LineError,
    LineErrorRaised,
    Vocabulary,
)
from memories.transfer.lines import json_line_load, line_parse

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


# --- id remapping -------------------------------------------------------------------------------------


@dataclass
class IdMap:
    """File ids → the new ids of an import (every memory and summary gets a new one)."""

    new_memory_id: Callable[[], str]
    new_summary_id: Callable[[], str]
    memories: dict[str, str] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)

    def memory_add(self, old: str) -> str:
        self.memories[old] = self.new_memory_id()
        return self.memories[old]

    def summary_add(self, old: str) -> str:
        self.summaries[old] = self.new_summary_id()
        return self.summaries[old]


def memory_remap(record: dict[str, Any], ids: IdMap) -> dict[str, Any]:
    out = dict(record)
    out["id"] = ids.memories[record["id"]]
    if record["consolidated_into"] is not None:
        out["consolidated_into"] = ids.memories[record["consolidated_into"]]
    return out


def link_remap(record: dict[str, Any], ids: IdMap) -> dict[str, Any]:
    return {**record, "source": ids.memories[record["source"]], "target": ids.memories[record["target"]]}


def memory_ref_remap(record: dict[str, Any], ids: IdMap) -> dict[str, Any]:
    """A signal or a session-ledger row: its ``memory``."""
    return {**record, "memory": ids.memories[record["memory"]]}


def summary_remap(record: dict[str, Any], ids: IdMap) -> dict[str, Any]:
    """A summary: its id, its memory, its sources and the sources its superseded facts name. A fact
    naming a memory that is not one of the summary's sources (a project's export leaves out sources in
    other projects) names none, as consolidation stores a fact whose source it was not shown
    (``memories/context/summary_parts.py``)."""
    sources = set(record["source_memory_ids"])
    facts = [
        {**fact, "source_memory_id": ids.memories[old] if (old := fact["source_memory_id"]) in sources else ""}
        for fact in record["superseded_facts"]
    ]
    return {
        **record,
        "id": ids.summaries[record["id"]],
        "memory": ids.memories[record["memory"]],
        "source_memory_ids": [ids.memories[old] for old in record["source_memory_ids"]],
        "superseded_facts": facts,
    }


# --- the checks across lines --------------------------------------------------------------------------


@dataclass
class ImportChecker:
    """Feeds on a file's lines one at a time (constant memory but for the ids it has seen) and
    collects every problem with its line; ``finish`` adds the problems only the whole file shows.

    ``into_project``: the import puts every memory into one project (so a summary's memory need not be
    a project memory in the file)."""

    vocab: Vocabulary
    now: datetime
    ids: IdMap
    into_project: bool = False
    errors: list[LineError] = field(default_factory=list)
    truncated: bool = False  # more errors than MAX_ERRORS
    header: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED_TYPES, 0))
    active_memories: int = 0
    project_slugs: set[str] = field(default_factory=set)
    team_slugs: set[str] = field(default_factory=set)
    last_where: str = "line 0"
    # file id of each project memory → its project's slug (a summary takes its memory's project)
    memory_projects: dict[str, str] = field(default_factory=dict)
    _references: list[tuple[str, str, str]] = field(default_factory=list)  # (where, field, memory id)
    _link_keys: set[tuple[str, str, str]] = field(default_factory=set)
    _summary_memories: dict[str, str] = field(default_factory=dict)
    _uses: set[tuple[str, str]] = field(default_factory=set)
    _weights_seen: set[str | None] = field(default_factory=set)
    _first_line: bool = True

    def error(self, where: str, field_name: str, message: str) -> None:
        if len(self.errors) >= MAX_ERRORS:
            self.truncated = True
            return
        self.errors.append(LineError(where, field_name, message))

    def feed(self, where: str, text: str) -> dict[str, Any] | None:
        """Check one raw line; its record, or None when it is invalid."""
        self.last_where = where
        try:
            record = line_parse(where, text, self.vocab, now=self.now)
        except LineErrorRaised as exc:
            self._first_line = False
            self.error(exc.error.where, exc.error.field, exc.error.message)
            self._id_of_invalid(text)
            return None
        self.feed_record(where, record)
        return record

    def _id_of_invalid(self, text: str) -> None:
        """An invalid line still counts, and an invalid memory or summary line still declares its id:
        references to it are not reported as well (one mistake, one error)."""
        try:
            data = json_line_load(text)
        except ValueError:
            return
        if isinstance(data, dict) and data.get("type") in COUNTED_TYPES:
            self.counts[data["type"]] += 1  # the end line's counts are not reported as well
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            if data.get("type") == "memory" and data["id"] not in self.ids.memories:
                self.ids.memory_add(data["id"])
                if isinstance(data.get("project"), str):
                    self.memory_projects[data["id"]] = data["project"]
            elif data.get("type") == "summary" and data["id"] not in self.ids.summaries:
                self.ids.summary_add(data["id"])

    def feed_record(self, where: str, record: dict[str, Any]) -> None:
        kind = record["type"]
        first, self._first_line = self._first_line, False
        if self.end is not None:
            self.error(where, "type", "nothing may follow the end line")
            return
        if kind == "header":
            if not first:
                self.error(where, "type", "the header must be the first line, and there is only one")
            elif record["version"] not in SUPPORTED_VERSIONS:
                supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
                message = f"version {record['version']!r} is not supported (this server reads {supported})"
                self.error(where, "version", message)
            else:
                self.header = record
            return
        if first:
            self.error(where, "type", f"the first line must be the header ({HEADER_EXAMPLE})")
        if kind == "end":
            self.end = record
            return
        self.counts[kind] += 1
        getattr(self, f"_on_{kind}")(where, record)

    def _on_weights(self, where: str, record: dict[str, Any]) -> None:
        key = record["project"]
        if key in self._weights_seen:
            self.error(where, "project", f"a second weights line for {key or 'the organization'}")
        self._weights_seen.add(key)
        if key:
            self.project_slugs.add(key)

    def _on_memory(self, where: str, record: dict[str, Any]) -> None:
        if record["id"] in self.ids.memories:
            self.error(where, "id", f"a second memory with id {record['id']!r}")
            return
        self.ids.memory_add(record["id"])
        if record["state"] == self.vocab.active_state:
            self.active_memories += 1
        if record["project"]:
            self.project_slugs.add(record["project"])
            self.memory_projects[record["id"]] = record["project"]
        if record["team"]:
            self.team_slugs.add(record["team"])
        if record["consolidated_into"] is not None:
            self._references.append((where, "consolidated_into", record["consolidated_into"]))
        embedding = record["embedding"]
        if embedding is not None and not record["embedding_model"]:
            self.error(where, "embedding_model", "an embedding needs the name of the model that made it")

    def _on_link(self, where: str, record: dict[str, Any]) -> None:
        if record["source"] == record["target"]:
            self.error(where, "target", "a link joins two different memories")
        key = (record["source"], record["target"], record["kind"])
        if key in self._link_keys:
            self.error(where, "kind", f"a second {record['kind']} link from {record['source']} to {record['target']}")
        self._link_keys.add(key)
        self._references += [(where, "source", record["source"]), (where, "target", record["target"])]

    def _on_signal(self, where: str, record: dict[str, Any]) -> None:
        self._references.append((where, "memory", record["memory"]))
        if record["project"]:
            self.project_slugs.add(record["project"])

    def _on_summary(self, where: str, record: dict[str, Any]) -> None:
        if record["id"] in self.ids.summaries:
            self.error(where, "id", f"a second summary with id {record['id']!r}")
            return
        self.ids.summary_add(record["id"])
        if record["memory"] in self._summary_memories:
            self.error(where, "memory", f"memory {record['memory']!r} already has a summary")
        self._summary_memories[record["memory"]] = where
        self._references.append((where, "memory", record["memory"]))
        self._references += [(where, "source_memory_ids", old) for old in record["source_memory_ids"]]

    def _on_session_use(self, where: str, record: dict[str, Any]) -> None:
        key = (record["session_key"], record["memory"])
        if key in self._uses:
            self.error(where, "memory", f"session {record['session_key']!r} lists this memory twice")
        self._uses.add(key)
        self._references.append((where, "memory", record["memory"]))

    def finish(self) -> list[LineError]:
        """Every problem of the file (at most MAX_ERRORS), in the order of its lines."""
        if self.header is None and self._first_line:
            self.error("line 1", "", "the file is empty: it needs a header line and an end line")
        for where, field_name, old in self._references:
            if old not in self.ids.memories:
                self.error(where, field_name, f"no memory with id {old!r} in this file")
        if not self.into_project:
            for old, where in self._summary_memories.items():
                if old in self.ids.memories and old not in self.memory_projects:
                    self.error(where, "memory", "a summary belongs to a project memory (this one is team- or org-wide)")
        if self.end is None and not self._first_line:
            self.error(
                self.last_where, "", "the file ends without its end line: it was cut short (an interrupted download?)"
            )
        elif self.end is not None and self.end["counts"] is not None:
            for kind in COUNTED_TYPES:
                if self.end["counts"][kind] != self.counts[kind]:
                    self.error(
                        "end line",
                        "counts",
                        f"says {self.end['counts'][kind]} {kind} lines, the file has {self.counts[kind]}",
                    )
        return sorted(self.errors, key=_line_order)


def _line_order(error: LineError) -> tuple[int, str]:
    digits = "".join(ch for ch in error.where if ch.isdigit())
    return (int(digits) if digits else 10**12, error.where)
