"""manage.py repair_summaries (docs/commands.md#repairing-summaries): finds the stored summaries that
break the contract (rows an older import let in), reports them, and with --apply repairs or removes
each, audited — within the one organization it is given."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AuditEvent
from memories.context.summary_parts import summary_parts_problems
from memories.models import MemorySummary
from tests.factories import MemoryFactory, summary_make

pytestmark = pytest.mark.django_db

DECISION = {"decision": "Use a deadline", "rationale": "bounded latency", "outcome": None, "confidence": "high"}


def repair(*args: str) -> list[str]:
    out = StringIO()
    call_command("repair_summaries", *args, stdout=out)
    return out.getvalue().splitlines()


def damaged(row: MemorySummary, **parts: Any) -> MemorySummary:
    MemorySummary.objects.filter(pk=row.pk).update(**parts)
    row.refresh_from_db()
    return row


@pytest.fixture
def bank(agent: Any) -> dict[str, MemorySummary]:
    """Org A's summaries: a good one, two an older import could have let in (one repairable, one
    without its text), and one of an unknown status."""
    source = MemoryFactory(principal=agent, title="Old advice: 30 s timeouts")
    good = summary_make(agent, summary="Time out every HTTP call.")
    fixable = damaged(
        summary_make(agent, sources=[source], summary="Time out every database call."),
        key_facts="a deadline on every call",
        decisions=[{"decision": "Use a deadline"}, {"decision": 7}, "Retry once", {**DECISION, "confidence": "SURE"}],
        superseded_facts=[
            {"original_fact": "30 s", "superseded_by": "5 s", "source_memory_id": "mem_of_another_org"},
            {"original_fact": "60 s", "superseded_by": "5 s", "source_memory_id": source.id},
            {"original_fact": "no successor"},
        ],
    )
    textless = damaged(summary_make(agent), summary="", decisions=[{"decision": "Use a deadline"}])
    unknown = damaged(summary_make(agent), status="done")
    return {"good": good, "fixable": fixable, "textless": textless, "unknown": unknown}


def test_a_dry_run_by_default_reports_what_it_finds_and_writes_nothing(bank):
    rows_before = list(MemorySummary.objects.order_by("pk").values())

    out = repair()

    assert out[-1] == "3"
    assert out[-2] == (
        "4 summaries checked, 3 break the contract: 1 would repair, 2 would remove (a dry run: --apply to write)"
    )
    fixable = next(line for line in out if bank["fixable"].id in line)
    assert fixable.startswith(f"acme {bank['fixable'].id} (memory {bank['fixable'].memory_id}): would repair — ")
    assert "key_facts: must be a list (got str)" in fixable
    assert not any(bank["good"].id in line for line in out)
    assert list(MemorySummary.objects.order_by("pk").values()) == rows_before
    assert not AuditEvent.objects.filter(verb__startswith="summary.").exists()


def test_apply_repairs_what_it_can_and_removes_what_it_cannot_each_audited_on_its_memory(bank):
    good_before = MemorySummary.objects.values().get(pk=bank["good"].pk)

    out = repair("--apply")

    assert out[-2] == "4 summaries checked, 3 break the contract: 1 repaired, 2 removed"
    fixed = MemorySummary.objects.get(pk=bank["fixable"].pk)
    assert summary_parts_problems(fixed, full=True) == []
    assert fixed.key_facts == ["a deadline on every call"]
    assert fixed.decisions == [
        {"decision": "Use a deadline", "rationale": "", "outcome": None, "confidence": "low"},
        {"decision": "Retry once", "rationale": "", "outcome": None, "confidence": "low"},
        {**DECISION, "confidence": "low"},
    ]
    assert [f["source_memory_id"] for f in fixed.superseded_facts] == ["", fixed.source_memory_ids[0]]
    assert fixed.embedding is not None
    assert set(MemorySummary.objects.values_list("pk", flat=True)) == {bank["good"].pk, bank["fixable"].pk}
    assert MemorySummary.objects.values().get(pk=bank["good"].pk) == good_before
    audit = {(e.verb, e.target_id): e.data for e in AuditEvent.objects.filter(verb__startswith="summary.")}
    assert set(audit) == {
        ("summary.repair", bank["fixable"].memory_id),
        ("summary.remove", bank["textless"].memory_id),
        ("summary.remove", bank["unknown"].memory_id),
    }
    assert audit[("summary.repair", bank["fixable"].memory_id)]["summary"] == bank["fixable"].id
    assert repair()[-1] == "0"  # nothing left to find


def test_a_repaired_summary_is_served_again(cast, token_client, bank):
    client = token_client(cast.org_a)
    assert bank["fixable"].id not in [s["id"] for s in client.get("/api/v1/summaries").json()["results"]]

    repair("--apply")

    assert bank["fixable"].id in [s["id"] for s in client.get("/api/v1/summaries").json()["results"]]


def test_with_org_it_finds_and_repairs_only_that_organizations_summaries(cast, bank):
    # a command is no route or tool (tests/test_cross_tenant_coverage.py): its wall is tested here
    charlie = cast.principal(cast.charlie)
    globex = damaged(summary_make(charlie, project="billing"), decisions=[{"decision": "Net 30"}])

    found = repair("--org", "acme")
    applied = repair("--org", "acme", "--apply")

    assert not any(globex.id in line for line in found + applied) and found[-1] == "3"
    assert MemorySummary.objects.get(pk=globex.pk).decisions == [{"decision": "Net 30"}]
    assert not AuditEvent.objects.filter(organization=cast.org_b, verb__startswith="summary.").exists()
    assert repair()[-1] == "1" and globex.id in repair("--org", "globex")[0]


def test_an_unknown_organization_is_an_error_naming_it(db):
    with pytest.raises(CommandError, match="organization 'initech' does not exist"):
        repair("--org", "initech")
