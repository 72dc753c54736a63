"""Importers for the memory files users come from (docs/export-import.md#from-other-tools), free of
Django: a Claude Code ``CLAUDE.md`` / memory markdown file and a mem0 export. Each turns its text into
memory lines of the ReasoningBank format (``memories.transfer.export_format``'s ``memory`` schema, the
fields a hand-written line may leave out left to their defaults), each with where it came from
(``line 12``, ``item 3``), so the import reports problems the same way for every format.

**CLAUDE.md**: every ``#``, ``##`` or ``###`` heading opens a section; deeper headings stay inside their
section's text. A section whose text is one bullet or numbered list and nothing else becomes one memory
per top-level item (such lists are independent rules: "Use pnpm, never npm", "Run the tests with -x"),
titled with the item's first sentence; any other section becomes one memory titled with its heading, its
text the content. The description is the section's place in the file (``CLAUDE.md › Testing ›
Fixtures``); tags are ``claude-md`` and the top-level section's slug. Text before the first heading is a
section titled with the file's name. Lines inside code fences are never headings or list items, and a
YAML front matter block is skipped.

**mem0** (the platform's ``get_all`` / export and the open-source ``Memory.get_all``): a JSON list of
memories, an object with ``results`` (or ``memories``) holding the list, one memory object, or JSON
Lines of memory objects. Each needs ``memory`` (its text); ``id``, ``created_at``, ``updated_at``,
``categories``, ``metadata``, ``user_id``, ``agent_id``, ``app_id``, ``run_id`` and the rest are
optional. A memory becomes a ``semantic`` memory (mem0 keeps facts and preferences): the text is the
content, its first sentence the title; categories become tags next to ``mem0`` and ``user:<id>`` /
``agent:<id>`` / ``app:<id>``; who it was about and its metadata are written into the description.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memories.transfer.export_format import (
    DESCRIPTION_MAX,
    TAG_MAX,
    TITLE_MAX,
    LineError,
)
from memories.transfer.lines import json_line_load

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

SOURCE_FORMATS = ("claude-md", "mem0")
TITLE_WORDS_MAX = 120  # a title made from text: its first sentence, cut at a word within this
TAGS_MAX = 20


@dataclass(frozen=True)
class SourceRecord:
    where: str
    record: dict[str, Any]


@dataclass
class SourceResult:
    records: list[SourceRecord] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def title_from(text: str, limit: int = TITLE_WORDS_MAX) -> str:
    """A title from free text: its first sentence (or line), cut at a word boundary with an ellipsis."""
    one_line = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", one_line, maxsplit=1)[0]
    sentence = sentence.rstrip(":").strip() or one_line
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def tag_from(text: str) -> str:
    """A tag from a heading or a category: lower case, words joined by ``-``, at most TAG_MAX long."""
    words = re.findall(r"[^\W_]+(?:[._:/+#-][^\W_]+)*", text.lower())
    return "-".join(words)[:TAG_MAX].strip("-")


def _tags(*candidates: str) -> list[str]:
    tags: list[str] = []
    for candidate in candidates:
        if candidate and candidate not in tags and len(tags) < TAGS_MAX:
            tags.append(candidate)
    return tags


# --- CLAUDE.md ------------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
SECTION_LEVELS = 3


@dataclass
class _Section:
    line: int
    title: str
    path: list[str]
    level: int = 0  # 0: the text before the first heading
    path_levels: list[int] = field(default_factory=list)
    body: list[tuple[int, str]] = field(default_factory=list)


def _sections(text: str, source_name: str) -> list[_Section]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        for index in range(1, len(lines)):
            if lines[index].strip() in ("---", "..."):
                start = index + 1
                break
    sections = [_Section(line=start + 1, title=source_name, path=[])]
    stack: list[tuple[int, str]] = []  # (level, heading) of the open headings
    fence = ""
    for index in range(start, len(lines)):
        number, line = index + 1, lines[index]
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            sections[-1].body.append((number, line))
            continue
        if opened:
            fence = opened.group(1)
            sections[-1].body.append((number, line))
            continue
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) <= SECTION_LEVELS and heading.group(2).strip():
            level, title = len(heading.group(1)), heading.group(2).strip()
            stack = [(lvl, text_) for lvl, text_ in stack if lvl < level]
            sections.append(
                _Section(
                    line=number,
                    title=title,
                    path=[t for _, t in stack],
                    level=level,
                    path_levels=[lvl for lvl, _ in stack],
                )
            )
            stack.append((level, title))
            continue
        sections[-1].body.append((number, line))
    return sections


def _trimmed(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    while body and not body[0][1].strip():
        body = body[1:]
    while body and not body[-1][1].strip():
        body = body[:-1]
    return body


def _list_items(body: list[tuple[int, str]]) -> list[tuple[int, list[str]]] | None:
    """The top-level items of a body that is one list and nothing else (items start at the margin;
    indented and blank lines continue the item above), or None."""
    items: list[tuple[int, list[str]]] = []
    for number, line in body:
        indent = len(line) - len(line.lstrip(" \t"))
        item = _ITEM.match(line)
        if item and indent <= 1:
            items.append((number, [item.group(1)]))
        elif items and (not line.strip() or indent >= 2):
            items[-1][1].append(line)
        else:
            return None
    return items or None


def _dedent(lines: list[str]) -> str:
    first, rest = lines[0], lines[1:]
    indents = [len(line) - len(line.lstrip()) for line in rest if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([first, *(line[cut:] for line in rest)]).strip()


def claude_md_records(text: str, *, source_name: str = "CLAUDE.md") -> SourceResult:
    """A CLAUDE.md or memory markdown file → one memory per section or per list item (module doc)."""
    result = SourceResult()
    for section in _sections(text, source_name):
        body = _trimmed(section.body)
        if not body:
            continue
        preamble = not section.path and section.title == source_name
        parents = [source_name, *section.path]
        # the tag names the top-level section: the first heading below a document title (``#``)
        headings = [*zip(section.path_levels, section.path, strict=True), (section.level, section.title)]
        below_title = [title for level, title in headings if level >= 2]
        top = below_title[0] if below_title else "" if preamble else section.title
        tags = _tags("claude-md", tag_from(top))
        items = _list_items(body)
        if items is not None:
            place = " › ".join(parents if preamble else [*parents, section.title])
            for number, lines in items:
                content = _dedent(lines)
                if content:
                    result.records.append(_md_record(number, title_from(content), place, content, tags))
            continue
        content = "\n".join(line for _, line in body)
        result.records.append(_md_record(section.line, section.title[:TITLE_MAX], " › ".join(parents), content, tags))
    return result


def _md_record(line: int, title: str, description: str, content: str, tags: list[str]) -> SourceRecord:
    return SourceRecord(
        f"line {line}",
        {
            "type": "memory",
            "id": f"claude-md-{line}",
            "title": title,
            "description": description[:DESCRIPTION_MAX],
            "content": content,
            "tags": tags,
            "kind": "procedural",
            "outcome": "success",
            "origin": "recorded",
        },
    )


# --- mem0 -------------------------------------------------------------------------------------------------

MEM0_ABOUT = ("user_id", "agent_id", "app_id", "run_id")


def _mem0_items(text: str, result: SourceResult) -> list[tuple[str, Any]]:
    try:
        data = json_line_load(text)
    except ValueError as whole:
        items: list[tuple[str, Any]] = []
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"line {number}", json_line_load(line)))
            except ValueError as exc:
                message = f"not valid JSON ({exc}); a mem0 export is one JSON document or JSON Lines"
                if number == 1:
                    message = f"not valid JSON ({whole})"
                result.errors.append(LineError(f"line {number}", "", message))
                return []
        return items
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            return [("item 1", data)]
    if not isinstance(data, list):
        result.errors.append(LineError("line 1", "", "a mem0 export is a list of memories or an object with results"))
        return []
    return [(f"item {index}", item) for index, item in enumerate(data, start=1)]


def _mem0_time(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC).isoformat()
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date and time")
    parsed = datetime.fromisoformat(value)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


def _describe(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def mem0_records(text: str) -> SourceResult:
    """A mem0 export → one semantic memory per mem0 memory (module doc)."""
    result = SourceResult()
    for where, item in _mem0_items(text, result):
        if not isinstance(item, dict):
            result.errors.append(LineError(where, "", "a mem0 memory is a JSON object"))
            continue
        memory = item.get("memory", item.get("text"))
        if not isinstance(memory, str) or not memory.strip():
            result.errors.append(LineError(where, "memory", "a mem0 memory needs its text in memory"))
            continue
        times: dict[str, str | None] = {}
        bad = False
        for name in ("created_at", "updated_at"):
            try:
                times[name] = _mem0_time(item.get(name))
            except (ValueError, OverflowError, OSError):
                result.errors.append(LineError(where, name, "is not an ISO 8601 date and time"))
                bad = True
        categories = item.get("categories") or []
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            result.errors.append(LineError(where, "categories", "must be a list of strings"))
            continue
        metadata = item.get("metadata") or {}
        if not isinstance(metadata, dict):
            result.errors.append(LineError(where, "metadata", "must be an object"))
            continue
        if bad:
            continue
        about = {name: item[name] for name in MEM0_ABOUT if isinstance(item.get(name), str | int) and item[name]}
        description = "Imported from mem0" + "".join(
            f"; {name.removesuffix('_id')} {value}" for name, value in about.items()
        )
        if metadata:
            description += "; metadata: " + ", ".join(f"{k}={_describe(v)}" for k, v in sorted(metadata.items()))
        tags = _tags(
            "mem0",
            *(tag_from(c) for c in categories),
            *(f"{name.removesuffix('_id')}:{value}"[:TAG_MAX] for name, value in about.items() if name != "run_id"),
        )
        record: dict[str, Any] = {
            "type": "memory",
            "id": f"mem0-{item.get('id') or where}",
            "title": title_from(memory),
            "description": description[:DESCRIPTION_MAX],
            "content": memory.strip(),
            "tags": tags,
            "kind": "semantic",
            "outcome": "success",
            "origin": "recorded",
        }
        if times["created_at"]:
            record["created_at"] = times["created_at"]
        if times["updated_at"]:
            record["updated_at"] = times["updated_at"]
        result.records.append(SourceRecord(where, record))
    return result


def source_records(fmt: str, text: str, *, source_name: str = "CLAUDE.md") -> SourceResult:
    if fmt == "claude-md":
        return claude_md_records(text, source_name=source_name)
    if fmt == "mem0":
        return mem0_records(text)
    raise ValueError(f"unknown source format {fmt!r}")


def unique_ids(records: Iterable[SourceRecord]) -> list[SourceRecord]:
    """Give records that share an id (two mem0 memories with one id) distinct ones."""
    seen: set[str] = set()
    out = []
    for source in records:
        record_id = str(source.record["id"])[:190]
        while record_id in seen:
            record_id += "'"
        seen.add(record_id)
        out.append(SourceRecord(source.where, {**source.record, "id": record_id}))
    return out
