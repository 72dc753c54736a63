"""The TypeScript client's export types (clients/typescript/src/export.ts) are the export format the service
writes (memories/transfer/export_format.py, docs/export-import.md#the-format-version-2): the same fields for
every line type, the same enumerated values as the models' choices, and a real export of a bank with a bit
of everything type-checks against ``ExportRecord[]`` under ``tsc --strict`` — while a wrong value does not,
and neither does agent code that misreads a record."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from memories.models import MemoryLink, MemorySignal, MemorySignalAggregate, ProjectSignalWeights, SessionMemoryUse
from memories.transfer import export_format as ef
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import vocabulary
from tests.clients.drift import TS_CLIENT, node_missing, node_tools
from tests.factories import MemoryFactory, MemoryLinkFactory, summary_make

EXPORT_TS = TS_CLIENT / "src" / "export.ts"
INTERFACES = {
    "header": "ExportHeader",
    "weights": "ExportWeights",
    "memory": "ExportMemory",
    "link": "ExportLink",
    "signal": "ExportSignal",
    "summary": "ExportSummary",
    "session_use": "ExportSessionUse",
    "end": "ExportEnd",
}
# each enumerated field's values (export_format.Vocabulary's attribute) → its alias in export.ts
ALIASES = {
    "kinds": "ExportKind",
    "outcomes": "ExportOutcome",
    "states": "ExportState",
    "archived_reasons": "ExportArchivedReason",
    "tiers": "ExportTier",
    "origins": "ExportOrigin",
    "link_kinds": "ExportLinkKind",
    "signal_types": "ExportSignalType",
    "summary_statuses": "ExportSummaryStatus",
    "session_vias": "ExportSessionVia",
}


def interface_fields(name: str) -> set[str]:
    text = EXPORT_TS.read_text(encoding="utf-8")
    found = re.search(rf"^export interface {name} \{{\n(?P<body>.*?)^\}}", text, re.MULTILINE | re.DOTALL)
    assert found, f"export.ts has no interface {name}"
    return set(re.findall(r"^  (\w+)\??:", found["body"], re.MULTILINE))


def alias_values(name: str) -> set[str]:
    found = re.search(rf"^export type {name} = (?P<union>[^;]+);", EXPORT_TS.read_text(encoding="utf-8"), re.MULTILINE)
    assert found, f"export.ts has no type {name}"
    return set(re.findall(r'"([^"]*)"', found["union"]))


@pytest.mark.parametrize("line_type", ef.LINE_TYPES)
def test_each_record_type_has_the_fields_of_the_format(line_type):
    assert interface_fields(INTERFACES[line_type]) == set(ef.SCHEMAS[line_type]) | {"type"}


def test_the_signal_aggregate_has_the_fields_of_the_format():
    assert interface_fields("ExportSignalAggregate") == set(ef.AGGREGATE)


@pytest.mark.django_db
@pytest.mark.parametrize("attribute", sorted(ALIASES))
def test_each_enumerated_field_has_the_models_choices(attribute):
    assert alias_values(ALIASES[attribute]) == set(getattr(vocabulary(), attribute))


def test_the_formats_own_constants_match():
    assert alias_values("ExportScope") == set(ef.SCOPES)
    assert alias_values("ExportCountedType") == set(ef.COUNTED_TYPES)
    assert f'format: "{ef.FORMAT}";' in EXPORT_TS.read_text(encoding="utf-8")


def tsc(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``tsc --strict --noEmit`` on one ES module that may import the client's sources by absolute path."""
    if node_missing():
        pytest.skip("node is not installed: the TypeScript client's type checks need it (docs/sdks.md)")
    (tmp_path / "check.mts").write_text(source)
    command = [str(node_tools() / "tsc"), "--strict", "--noEmit", "--skipLibCheck", "--target", "es2022"]
    command += ["--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom", "check.mts"]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.fixture
def exported(cast: Any) -> list[dict[str, Any]]:
    """An export of org A holding every line type, with embeddings."""
    alice = cast.principal(cast.alice)
    now = timezone.now()
    merged = MemoryFactory(principal=alice, project="web-app", title="Retry webhooks with jittered backoff")
    source = MemoryFactory(principal=alice, project="web-app", title="Retry webhooks", kind="episodic")
    source.state, source.archived_reason, source.archived_at, source.consolidated_into = (
        "archived",
        "consolidated",
        now,
        merged,
    )
    source.save()
    MemoryFactory(principal=alice, scope="org", title="Every service logs JSON", project="web-app")
    MemoryLinkFactory(source=merged, target=source, kind=MemoryLink.KIND_CONSOLIDATES, reason="cluster of 2")
    MemorySignal.objects.create(
        organization=cast.org_a, memory=merged, project=cast.project_a, type="explicit", positive=True,
        session_id="s-1", comment="helped", actor="user:alice@acme.test", confidence_after=0.9,
    )  # fmt: skip
    MemorySignalAggregate.objects.create(
        memory=merged, organization=cast.org_a, explicit_pos=4, last_rollup=now, explicit_pos_kept=2.5, decayed_at=now
    )
    summary_make(alice, memory=merged, sources=[source], superseded_facts=(
        {"original_fact": "retry 3 times", "superseded_by": "retry with backoff", "source_memory_id": source.id},
    ))  # fmt: skip
    SessionMemoryUse.objects.create(
        organization=cast.org_a, session_key="claude-42", memory=merged, via="search", outcome="success", outcome_at=now
    )
    ProjectSignalWeights.objects.create(organization=cast.org_a, project=cast.project_a, explicit_alpha=9.5)
    text = "".join(export_lines(export_scope(alice, embeddings=True)))
    records = [json.loads(line) for line in text.splitlines()]
    assert {record["type"] for record in records} == set(ef.LINE_TYPES)
    return records


def typed_export(records: list[dict[str, Any]]) -> str:
    lines = ",\n".join(json.dumps(record) for record in records)
    return (
        f"import type {{ ExportRecord }} from {json.dumps(str(TS_CLIENT / 'src' / 'export.js'))};\n"
        f"export const records: ExportRecord[] = [\n{lines}\n];\n"
    )


def test_a_real_export_type_checks_as_export_records_and_a_wrong_value_does_not(exported, tmp_path):
    result = tsc(tmp_path, typed_export(exported))
    assert result.returncode == 0, result.stdout + result.stderr
    wrong = [dict(record, kind="dream") if record["type"] == "memory" else record for record in exported]
    result = tsc(tmp_path, typed_export(wrong))
    assert result.returncode != 0 and '"dream"' in result.stdout, result.stdout


AGENT_CODE = f"""
import {{ ReasoningBank }} from {json.dumps(str(TS_CLIENT / "dist" / "index.js"))};  // as installed: dist/
const bank = new ReasoningBank({{ baseUrl: "http://127.0.0.1:8000", token: "rb_x" }});
for await (const record of bank.export({{ project: "web-app" }})) {{
  if (record.type === "memory") console.log(record.title.toUpperCase(), record.confidence.toFixed(2));
  if (record.type === "end") console.log(record.counts.memory);
  if (record.type === "memory") console.log(record.titel);
  if (record.type === "memroy") console.log(record);
}}
for await (const memory of bank.memoryList({{ project: "web-app" }})) console.log(memory.title, memory.tier);
"""


def test_agent_code_reading_export_records_is_checked_field_by_field(tmp_path):
    result = tsc(tmp_path, AGENT_CODE)
    errors = [line for line in result.stdout.splitlines() if "error TS" in line]
    assert len(errors) == 2, result.stdout  # exactly the two planted mistakes
    assert "Property 'titel' does not exist" in result.stdout
    assert '"memroy"' in result.stdout
