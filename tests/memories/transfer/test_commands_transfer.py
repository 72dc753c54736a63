"""``manage.py export_memories`` and ``import_memories`` (docs/export-import.md): a file out, the same
bank in, progress on standard error, a bad file's problems listed and nothing written."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AuditEvent, Project
from memories.models import Memory, MemoryLink
from tests.factories import MemoryFactory, MemoryLinkFactory, OrganizationFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def acme_bank(cast: Any) -> list[Memory]:
    alice = cast.principal(cast.alice)
    memories = [MemoryFactory(principal=alice, project="web-app", title=f"Lesson {n}") for n in range(3)]
    MemoryLinkFactory(source=memories[0], target=memories[1], kind=MemoryLink.KIND_SUPERSEDES)
    return memories


def test_export_to_a_file_then_import_it_into_another_org(cast, acme_bank, tmp_path: Path):
    target = OrganizationFactory(slug="initech", plan="pro")
    path = tmp_path / "acme.jsonl"

    _, exported = run("export_memories", "acme", "--output", str(path))
    out, progress = run("import_memories", "initech", str(path))

    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header" and json.loads(lines[-1])["type"] == "end"
    assert "exported 3 memories, 1 link" in exported and str(path) in exported
    assert "checked 6/6" in progress and "memories 3/3" in progress
    assert out.strip() == "imported 3 memories, 1 link into initech; created project web-app"
    assert Memory.objects.filter(organization=target).count() == 3
    assert MemoryLink.objects.filter(organization=target, kind="supersedes").count() == 1


def test_export_of_one_project_to_standard_output(cast, acme_bank, capsys):
    call_command("export_memories", "acme", "--project", "web-app")

    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0])["project"] == "web-app" and len(lines) == 2 + 3 + 1


def test_a_dry_run_imports_nothing(cast, acme_bank, tmp_path: Path):
    OrganizationFactory(slug="initech", plan="pro")
    path = tmp_path / "acme.jsonl"
    run("export_memories", "acme", "-o", str(path))

    out, _ = run("import_memories", "initech", str(path), "--dry-run")

    assert out.startswith("would import 3 memories, 1 link into initech; created project web-app")
    assert not Project.objects.filter(organization__slug="initech").exists()


def test_a_bad_file_lists_its_problems_and_imports_nothing(cast, tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"type":"header","format":"reasoningbank-export","version":1}\n'
        '{"type":"memory","id":"m1","project":"web-app","title":"t","content":"c","outcome":"great"}\n'
    )
    err = StringIO()

    with pytest.raises(CommandError) as caught:
        call_command("import_memories", "acme", str(path), stderr=err)

    assert "2 problem(s); nothing was imported" in str(caught.value)
    assert "line 2, field outcome: must be one of success, failure, mixed (got 'great')" in err.getvalue()
    assert "cut short" in err.getvalue()
    assert not Memory.objects.exists()


@pytest.mark.parametrize("fmt", ["reasoningbank", "mem0"])
def test_a_line_nested_a_thousand_deep_is_a_clear_problem_not_a_recursion_error(cast, tmp_path: Path, fmt):
    path = tmp_path / "deep.jsonl"
    deep = '{"type":"memory","id":"m1","title":"t","content":' + "[" * 1000 + "]" * 1000 + "}"
    path.write_text('{"type":"header","format":"reasoningbank-export","version":1}\n' + deep + "\n")
    err = StringIO()

    with pytest.raises(CommandError) as caught:
        call_command("import_memories", "acme", str(path), "--format", fmt, "--project", "web-app", stderr=err)

    assert "nothing was imported" in str(caught.value)
    assert "line 2" in err.getvalue() and "nested deeper than 64 levels" in err.getvalue()
    assert not Memory.objects.exists()


def test_a_claude_md_and_a_mem0_export_come_in_with_their_format(cast, tmp_path: Path):
    claude = tmp_path / "CLAUDE.md"
    claude.write_text("# Shop\n\n## Style\n- Prefer small pull requests\n- Name branches after the ticket\n")
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps([{"id": "x", "memory": "The team deploys on Tuesdays", "user_id": "ops"}]))

    first, _ = run("import_memories", "acme", str(claude), "--format", "claude-md", "--project", "web-app")
    second, _ = run("import_memories", "acme", str(mem0), "--format", "mem0")

    assert first.strip() == "imported 2 memories into acme/web-app"
    assert second.strip() == "imported 1 memory into acme/web-app"
    style = Memory.objects.get(title="Prefer small pull requests")
    assert style.description == "CLAUDE.md › Shop › Style"
    assert Memory.objects.get(kind="semantic").tags == ["mem0", "user:ops"]


def test_unknown_org_file_or_project_is_a_clear_error(cast, tmp_path: Path):
    with pytest.raises(CommandError, match="organization 'nope' does not exist"):
        call_command("export_memories", "nope")
    with pytest.raises(CommandError, match="no file"):
        call_command("import_memories", "acme", str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="project 'billing' not found"):
        call_command("export_memories", "acme", "--project", "billing")


def test_import_with_reviewed_trusts_the_memories_names_the_file_and_is_audited(cast, acme_bank, tmp_path: Path):
    target = OrganizationFactory(slug="initech", plan="pro")
    path = tmp_path / "acme.jsonl"
    run("export_memories", "acme", "--output", str(path))

    _, pending_note = run("import_memories", "initech", str(path))
    _, reviewed_note = run("import_memories", "initech", str(path), "--reviewed")  # the same file again

    memories = Memory.objects.filter(organization=target)
    assert sorted(memories.values_list("trust", flat=True)) == ["pending"] * 3 + ["trusted"] * 3
    assert {m.provenance["import"]["file"] for m in memories} == {"acme.jsonl"}
    assert "pending: searchable, injected once a person reviews them" in pending_note
    assert "trusted for injection (--reviewed)" in reviewed_note
    audits = AuditEvent.objects.filter(organization=target, verb="bank.import").order_by("created_at", "id")
    assert [a.data["reviewed"] for a in audits] == [False, True]
