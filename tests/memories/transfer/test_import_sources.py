"""The importers of other tools' memory files (memories/transfer/import_sources.py): a CLAUDE.md and a mem0
export become memory lines — no database."""

from __future__ import annotations

import json

from memories.transfer.import_sources import claude_md_records, mem0_records, tag_from, title_from, unique_ids

CLAUDE_MD = """---
description: project memory
---
# Acme storefront

The storefront talks to the orders service over gRPC.

## Commands
- Run the tests with `pytest -x` before every push
- Use pnpm, never npm
  (npm rewrites the lockfile)

## Code style
Use 2-space indentation in TypeScript files.

```bash
# a comment in a code block, not a heading
pnpm lint
```

### Imports
1. Sort imports with the project's eslint rule
2. No wildcard imports

## Later
#### A deep heading stays in the text
Deploys go out on Tuesdays.
"""


def by_title(text: str) -> dict[str, dict]:
    result = claude_md_records(text)
    assert result.errors == []
    return {source.record["title"]: {**source.record, "where": source.where} for source in result.records}


def test_sections_become_memories_titled_by_their_heading():
    records = by_title(CLAUDE_MD)

    style = records["Code style"]
    assert style["content"].startswith("Use 2-space indentation") and "# a comment in a code block" in style["content"]
    assert style["description"] == "CLAUDE.md › Acme storefront"
    assert style["tags"] == ["claude-md", "code-style"]
    assert style["where"] == "line 13"
    assert (style["kind"], style["outcome"], style["origin"]) == ("procedural", "success", "recorded")
    assert records["Later"]["content"] == "#### A deep heading stays in the text\nDeploys go out on Tuesdays."
    assert records["Acme storefront"]["content"] == "The storefront talks to the orders service over gRPC."


def test_a_section_that_is_one_list_becomes_one_memory_per_item():
    records = by_title(CLAUDE_MD)

    pnpm = records["Use pnpm, never npm (npm rewrites the lockfile)"]
    assert pnpm["content"] == "Use pnpm, never npm\n(npm rewrites the lockfile)"
    assert pnpm["description"] == "CLAUDE.md › Acme storefront › Commands"
    assert pnpm["tags"] == ["claude-md", "commands"]
    assert "Run the tests with `pytest -x` before every push" in records
    imports = records["Sort imports with the project's eslint rule"]
    assert imports["description"] == "CLAUDE.md › Acme storefront › Code style › Imports"
    assert imports["tags"] == ["claude-md", "code-style"]
    assert "No wildcard imports" in records
    assert len(records) == 7  # the front matter makes none


def test_text_before_any_heading_is_titled_with_the_file_name():
    records = claude_md_records("Always run migrations in a transaction.\n", source_name="MEMORY.md").records

    assert [(r.record["title"], r.record["description"]) for r in records] == [("MEMORY.md", "MEMORY.md")]


def test_a_title_is_the_first_sentence_cut_at_a_word():
    assert title_from("Use pnpm. It keeps the lockfile.") == "Use pnpm."
    long = title_from("word " * 60)
    assert len(long) <= 120 and long.endswith("…") and not long.endswith(" …")
    assert tag_from("Code Style & Linting") == "code-style-linting"


def test_a_mem0_get_all_answer_becomes_semantic_memories():
    export = {
        "results": [
            {
                "id": "7f3c",
                "memory": "Prefers dark mode in every editor",
                "hash": "abc",
                "user_id": "alex",
                "agent_id": "helper",
                "categories": ["user_preferences", "Technology"],
                "metadata": {"source": "chat"},
                "created_at": "2024-07-20T01:21:34.123456-07:00",
                "updated_at": "2024-07-21T10:00:00Z",
            }
        ],
        "count": 1,
    }
    (source,) = mem0_records(json.dumps(export)).records

    record = source.record
    assert source.where == "item 1"
    assert record["content"] == record["title"] == "Prefers dark mode in every editor"
    assert record["kind"] == "semantic" and record["id"] == "mem0-7f3c"
    assert record["tags"] == ["mem0", "user_preferences", "technology", "user:alex", "agent:helper"]
    assert record["description"] == "Imported from mem0; user alex; agent helper; metadata: source=chat"
    assert record["created_at"] == "2024-07-20T01:21:34.123456-07:00"


def test_mem0_lists_json_lines_and_naive_times_are_read():
    listed = mem0_records(json.dumps([{"memory": "Works at TechCorp", "created_at": "2024-01-01T00:00:00"}]))
    lines = mem0_records('{"memory": "Likes tea"}\n\n{"memory": "Uses vim"}\n')

    assert listed.records[0].record["created_at"] == "2024-01-01T00:00:00+00:00"
    assert [(s.where, s.record["content"]) for s in lines.records] == [("line 1", "Likes tea"), ("line 3", "Uses vim")]


def test_mem0_problems_name_the_item_and_field():
    result = mem0_records(json.dumps([{"memory": "ok"}, {"memory": ""}, {"memory": "x", "created_at": "soon"}, 5]))

    assert [(e.where, e.field) for e in result.errors] == [
        ("item 2", "memory"),
        ("item 3", "created_at"),
        ("item 4", ""),
    ]
    assert "line 2" in str(mem0_records('{"memory": "a"}\n{broken').errors[0])


def test_records_sharing_an_id_get_distinct_ones():
    records = mem0_records(json.dumps([{"id": 1, "memory": "a"}, {"id": 1, "memory": "b"}])).records

    assert len({source.record["id"] for source in unique_ids(records)}) == 2
