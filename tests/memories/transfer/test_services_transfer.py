"""Export and import of a whole memory bank (docs/export-import.md): the round trip is lossless, a bad
file writes nothing, and the other tools' files come in as memories of a project."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.access import Principal, system_principal
from accounts.models import AuditEvent, Membership, Organization, Project, Team
from memories.models import (
    Memory,
    MemoryLink,
    MemorySignal,
    MemorySignalAggregate,
    MemorySummary,
    ProjectSignalWeights,
    SessionMemoryUse,
)
from memories.transfer import export_format as ef
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import ImportInvalid, bank_import
from reasoningbank.errors import Forbidden, InvalidInput, LimitExceeded, NotFound, PlanRequired
from tests.factories import (
    MemoryFactory,
    MemoryLinkFactory,
    OrganizationFactory,
    ProjectFactory,
    TeamFactory,
    summary_make,
)

pytestmark = pytest.mark.django_db


def export_text(principal: Principal, **kwargs: Any) -> str:
    return "".join(export_lines(export_scope(principal, **kwargs)))


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def bank(cast: Any) -> dict[str, Any]:
    """Org A with a bit of everything: a consolidation with lineage and a summary, a contradiction, an
    archived memory, team- and org-wide memories, signals, rolled-up counts, the session ledger and
    learned weights."""
    Organization.objects.filter(pk=cast.org_a.pk).update(plan="teams")
    cast.org_a.refresh_from_db()
    alice = cast.principal(cast.alice)
    team = TeamFactory(organization=cast.org_a, slug="platform", name="Platform team")
    api = ProjectFactory(organization=cast.org_a, slug="api", name="The API", team=team)
    now = timezone.now()
    first = MemoryFactory(principal=alice, project="web-app", title="Retry webhooks", tags=["webhooks", "retry"])
    second = MemoryFactory(principal=alice, project="web-app", title="Retry webhooks with backoff", kind="episodic")
    merged = MemoryFactory(
        principal=alice, project="web-app", title="Retry webhooks with jittered backoff", kind="semantic",
        origin=Memory.ORIGIN_CONSOLIDATED, confidence=0.91, alpha=9.1, beta=0.9, usage_count=7, last_used_at=now,
        tier="warm", retention=0.66, last_signal_at=now - timedelta(days=2),
    )  # fmt: skip
    Memory.objects.filter(pk__in=[first.pk, second.pk]).update(
        state=Memory.STATE_ARCHIVED, archived_reason=Memory.ARCHIVED_CONSOLIDATED, archived_at=now,
        consolidated_into=merged, tier="archived",
    )  # fmt: skip
    rival = MemoryFactory(principal=alice, project="web-app", title="Never retry webhooks", outcome="failure")
    stale = MemoryFactory(principal=alice, project="web-app", title="Old deploy script")
    Memory.objects.filter(pk=stale.pk).update(state="archived", archived_reason="manual", archived_at=now)
    team_wide = MemoryFactory(principal=alice, project="api", scope="team", title="Platform runbooks live in the wiki")
    org_wide = MemoryFactory(principal=alice, scope="org", title="Every service logs JSON", project="web-app")
    MemoryLinkFactory(source=merged, target=first, kind=MemoryLink.KIND_CONSOLIDATES, reason="cluster of 2")
    MemoryLinkFactory(source=merged, target=second, kind=MemoryLink.KIND_CONSOLIDATES, weight=0.93)
    MemoryLinkFactory(
        source=merged, target=rival, kind=MemoryLink.KIND_CONTRADICTS, reason="opposite advice", resolved_at=now
    )
    MemoryLinkFactory(source=team_wide, target=org_wide, kind=MemoryLink.KIND_REFERENCES)
    for memory, kind, positive in ((merged, "explicit", True), (merged, "usage", True), (rival, "outcome", False)):
        MemorySignal.objects.create(
            organization=cast.org_a, memory=memory, project=cast.project_a, type=kind, positive=positive,
            session_id="s-1", comment="helped" if positive else "", actor="user:alice@acme.test",
            confidence_after=0.9, created_at=now - timedelta(days=2),
        )  # fmt: skip
    MemorySignalAggregate.objects.create(  # decayed once (time decay), then 2 signals folded
        memory=merged, organization=cast.org_a, explicit_pos=4, usage_pos=30, usage_neg=2, last_rollup=now,
        explicit_pos_kept=2.75, explicit_neg_kept=0.0, usage_pos_kept=21.125, usage_neg_kept=1.5,
        outcome_pos_kept=0.0, outcome_neg_kept=0.0, stability_pos_kept=0.0, stability_neg_kept=0.0,
        decayed_at=now - timedelta(days=40),
    )  # fmt: skip
    summary_make(alice, memory=merged, sources=[first, second], superseded_facts=(
        {"original_fact": "retry 3 times", "superseded_by": "retry with backoff", "source_memory_id": first.id},
    ))  # fmt: skip
    SessionMemoryUse.objects.create(
        organization=cast.org_a, session_key="claude-42", memory=merged, via="search", outcome="success",
        outcome_at=now,
    )  # fmt: skip
    ProjectSignalWeights.objects.create(
        organization=cast.org_a, project=cast.project_a, explicit_alpha=9.5, usage_beta=6
    )
    ProjectSignalWeights.objects.create(organization=cast.org_a, project=None, outcome_alpha=6.5)
    return {"merged": merged, "first": first, "second": second, "rival": rival, "team": team, "api": api}


@pytest.fixture
def empty_org(cast: Any) -> Organization:
    org = OrganizationFactory(slug="initech", name="Initech", plan="teams")
    Membership.objects.create(organization=org, user=cast.alice, role=Membership.ROLE_OWNER)
    return org


# what an import writes anew: its own provenance (imported, by whom; the file's kept inside as a claim), its trust
# and review (tests/memories/transfer/test_services_transfer_provenance.py)
IMPORT_OWN = ("provenance", "trust", "reviewed_by", "reviewed_at")


def normalised(text: str, memory_ids: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The export's lines by type, sorted, with the header's time and org left out, old ids replaced by
    the new ones (``memory_ids``), summary ids by their memory's, and what an import records anew left out."""
    ids = memory_ids or {}
    out: dict[str, list[str]] = {}
    for record in records(text):
        kind = record["type"]
        if kind == "header":
            record = {**record, "exported_at": None, "organization": None}
        if kind == "memory":
            record = {key: value for key, value in record.items() if key not in IMPORT_OWN}
            record["id"] = ids.get(record["id"], record["id"])
            record["consolidated_into"] = ids.get(record["consolidated_into"], record["consolidated_into"])
        if kind == "link":
            record["source"] = ids.get(record["source"], record["source"])
            record["target"] = ids.get(record["target"], record["target"])
        if kind in ("signal", "session_use"):
            record["memory"] = ids.get(record["memory"], record["memory"])
        if kind == "summary":
            record["memory"] = ids.get(record["memory"], record["memory"])
            record["id"] = f"summary of {record['memory']}"
            record["source_memory_ids"] = [ids.get(old, old) for old in record["source_memory_ids"]]
            for fact in record["superseded_facts"]:
                fact["source_memory_id"] = ids.get(fact["source_memory_id"], fact["source_memory_id"])
        out.setdefault(kind, []).append(json.dumps(record, sort_keys=True))
    return {kind: sorted(lines) for kind, lines in out.items()}


def test_export_then_import_into_an_empty_org_then_export_gives_the_same_bank(cast, bank, empty_org):
    first = export_text(system_principal(cast.org_a))

    result = bank_import(principal=system_principal(empty_org), source=first)
    second = export_text(system_principal(empty_org))

    assert normalised(second) == normalised(first, result.memory_ids)
    assert result.created == {"weights": 2, "memory": 7, "link": 4, "signal": 3, "summary": 1, "session_use": 1}
    assert sorted(result.projects_created) == ["api", "web-app"] and result.teams_created == ["platform"]
    old_ids = set(result.memory_ids)
    assert not old_ids & set(Memory.objects.filter(organization=empty_org).values_list("id", flat=True))


def test_the_round_trip_keeps_lineage_places_and_trust(cast, bank, empty_org):
    result = bank_import(principal=system_principal(empty_org), source=export_text(system_principal(cast.org_a)))
    new = result.memory_ids

    merged = Memory.objects.get(pk=new[bank["merged"].id])
    first = Memory.objects.get(pk=new[bank["first"].id])
    assert merged.organization == empty_org and merged.project.slug == "web-app"
    assert (merged.confidence, merged.alpha, merged.beta, merged.usage_count, merged.tier) == (
        0.91,
        9.1,
        0.9,
        7,
        "warm",
    )
    assert (first.state, first.archived_reason, first.consolidated_into_id) == ("archived", "consolidated", merged.id)
    assert first.created_by_user == cast.alice  # alice is a member of the new org too
    assert merged.embedding is not None and merged.content_hash == bank["merged"].content_hash
    assert set(merged.links_out.values_list("kind", "target_id")) == {
        ("consolidates", first.id), ("consolidates", new[bank["second"].id]), ("contradicts", new[bank["rival"].id])
    }  # fmt: skip
    team_memory = Memory.objects.get(organization=empty_org, team__isnull=False)
    assert (team_memory.scope, team_memory.team.slug, team_memory.team.name) == ("team", "platform", "Platform team")
    assert Project.objects.get(organization=empty_org, slug="api").team.slug == "platform"
    assert Memory.objects.get(organization=empty_org, project=None, team=None).scope == "org"
    summary = MemorySummary.objects.get(organization=empty_org)
    assert summary.memory_id == merged.id and summary.source_memory_ids == [first.id, new[bank["second"].id]]
    assert summary.superseded_facts[0]["source_memory_id"] == first.id
    assert summary.consolidation_run_id == "" and summary.embedding is not None
    aggregate = MemorySignalAggregate.objects.get(memory=merged)
    assert (aggregate.usage_pos, aggregate.usage_pos_kept, aggregate.explicit_pos_kept) == (30, 21.125, 2.75)
    assert aggregate.decayed_at == bank["merged"].signal_aggregate.decayed_at
    assert merged.last_signal_at == bank["merged"].last_signal_at
    assert SessionMemoryUse.objects.get(organization=empty_org).memory_id == merged.id
    weights = ProjectSignalWeights.objects.get(organization=empty_org, project__slug="web-app")
    assert (weights.explicit_alpha, weights.usage_beta) == (9.5, 6)
    audit = AuditEvent.objects.get(organization=empty_org, verb="bank.import")
    assert audit.data["created"]["memory"] == 7


def test_a_promotion_by_the_ladder_survives_the_round_trip(cast, agent, empty_org):
    promoted_at = timezone.now() - timedelta(hours=5)
    fact = MemoryFactory(principal=agent, project="web-app", title="Staging runs in eu-west", kind="episodic")
    Memory.objects.filter(pk=fact.pk).update(
        promoted_from="semantic", promoted_at=promoted_at, promotion_reason="confidence 0.9 > 0.8 and age 3 h > 2 h"
    )

    result = bank_import(principal=system_principal(empty_org), source=export_text(system_principal(cast.org_a)))

    copy = Memory.objects.get(pk=result.memory_ids[fact.id])
    assert (copy.kind, copy.promoted_from, copy.promoted_at, copy.promotion_reason) == (
        "episodic",
        "semantic",
        promoted_at,
        "confidence 0.9 > 0.8 and age 3 h > 2 h",
    )


def test_every_memory_column_is_exported_or_deliberately_left_out():
    """A new column on Memory must be carried by the format (export_format.SCHEMAS) or listed here with
    the reason, so that the round trip stays lossless."""
    left_out = {
        "organization": "the org imported into",
        "embedding": "re-embedded on import (exported only with embeddings=true)",
        "content_hash": "recomputed from the text",
        "search_vector": "generated by PostgreSQL",
        "source_session": "sessions (their traces) are not exported",
        "created_by_token": "tokens are credentials of the old org",
        "impression_count": "impressions are this instance's agents' counts, started anew",
        "impressions_unused": "impressions are this instance's agents' counts, started anew",
        "last_shown_at": "impressions are this instance's agents' counts, started anew",
    }
    columns = {f.name for f in Memory._meta.concrete_fields}
    carried = set(ef.MEMORY_FIELDS) | {"created_by_user"}

    assert columns - carried - set(left_out) == set()


def test_a_project_export_holds_that_projects_memories_and_drops_references_outside_it(cast, bank):
    alice = cast.principal(cast.alice)
    outsider = MemoryFactory(principal=alice, project="api", title="Outside the export")
    Memory.objects.filter(pk=bank["rival"].pk).update(consolidated_into=outsider)

    lines = records(export_text(system_principal(cast.org_a), project="web-app"))

    assert lines[0]["project"] == "web-app" and [p["slug"] for p in lines[0]["projects"]] == ["web-app"]
    memories = [line for line in lines if line["type"] == "memory"]
    assert {m["project"] for m in memories} == {"web-app"} and len(memories) == 5
    assert [m["consolidated_into"] for m in memories if m["id"] == bank["rival"].id] == [None]
    assert {line["kind"] for line in lines if line["type"] == "link"} == {"consolidates", "contradicts"}
    assert lines[-1]["dropped"] == {"consolidated_into": 1}
    assert [line["project"] for line in lines if line["type"] == "weights"] == ["web-app"]


def test_importing_into_one_project_puts_every_memory_there(cast, bank, empty_org):
    target = ProjectFactory(organization=empty_org, slug="storefront")

    result = bank_import(
        principal=system_principal(empty_org), source=export_text(system_principal(cast.org_a)), project="storefront"
    )

    assert result.project == "storefront" and result.projects_created == []
    assert set(Memory.objects.filter(organization=empty_org).values_list("project", flat=True)) == {target.id}
    assert MemorySummary.objects.get(organization=empty_org).project == target
    assert not Team.objects.filter(organization=empty_org).exists()


def test_a_bad_line_is_reported_by_number_and_nothing_is_written(cast, bank, empty_org):
    lines = export_text(system_principal(cast.org_a)).splitlines()
    broken = [json.loads(line) for line in lines]
    broken[3]["outcome"] = "win"
    broken[5]["confidence"] = 2
    text = "\n".join([*(json.dumps(record) for record in broken[:8]), "{oops", *lines[8:]])
    before = (Memory.objects.count(), Project.objects.count(), AuditEvent.objects.count())

    with pytest.raises(ImportInvalid) as caught:
        bank_import(principal=system_principal(empty_org), source=text)

    assert [(e.where, e.field) for e in caught.value.errors] == [
        ("line 4", "outcome"),
        ("line 6", "confidence"),
        ("line 9", ""),
    ]
    assert "line 4, field outcome: must be one of success, failure, mixed (got 'win')" in caught.value.message
    assert caught.value.by_place()["line 6"] == ["field confidence: must be at most 1.0"]
    assert (Memory.objects.count(), Project.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize(
    ("part", "value", "message"),
    [
        ("decisions", [{"decision": "Retry with backoff"}], "item 1: lacks the key 'rationale'"),
        ("decisions", [{"decision": 7, "rationale": "", "outcome": None, "confidence": "high"}], "must be a string"),
        ("superseded_facts", [{"original_fact": "retry 3 times"}], "item 1: lacks the key 'superseded_by'"),
        ("superseded_facts", [{"original_fact": ["a"], "superseded_by": "b", "source_memory_id": ""}], "a string"),
    ],
    ids=["decision-lacking-keys", "decision-of-the-wrong-type", "fact-lacking-keys", "fact-of-the-wrong-type"],
)
def test_a_summary_whose_parts_a_read_could_not_render_is_refused_and_nothing_is_written(
    cast, bank, empty_org, part, value, message
):
    exported = records(export_text(system_principal(cast.org_a)))
    number = next(n for n, record in enumerate(exported, start=1) if record["type"] == "summary")
    exported[number - 1][part] = value
    before = [model.objects.count() for model in (Memory, MemorySummary, Project, AuditEvent)]

    with pytest.raises(ImportInvalid) as caught:
        bank_import(principal=system_principal(empty_org), source="\n".join(json.dumps(r) for r in exported))

    assert [(e.where, e.field) for e in caught.value.errors] == [(f"line {number}", part)]
    assert message in caught.value.errors[0].message
    assert [model.objects.count() for model in (Memory, MemorySummary, Project, AuditEvent)] == before


def test_a_failure_while_writing_leaves_nothing_behind(cast, bank, empty_org, monkeypatch):
    from memories.transfer import writer

    def broken(*args: Any, **kwargs: Any) -> None:
        raise InvalidInput("the session ledger could not be written")

    monkeypatch.setattr(writer.ImportWriter, "_use", broken)
    before = (Memory.objects.count(), Project.objects.count(), Team.objects.count())

    with pytest.raises(InvalidInput):
        bank_import(principal=system_principal(empty_org), source=export_text(system_principal(cast.org_a)))

    assert (Memory.objects.count(), Project.objects.count(), Team.objects.count()) == before


def test_a_dry_run_checks_and_reports_but_writes_nothing(cast, bank, empty_org):
    before = Memory.objects.count()

    result = bank_import(
        principal=system_principal(empty_org), source=export_text(system_principal(cast.org_a)), dry_run=True
    )

    assert result.dry_run and result.created["memory"] == 7 and sorted(result.projects_created) == ["api", "web-app"]
    assert Memory.objects.count() == before and not Project.objects.filter(organization=empty_org).exists()


def test_embeddings_of_the_same_embedder_come_along_when_exported(cast, bank, empty_org, monkeypatch):
    from memories.transfer import writer

    text = export_text(system_principal(cast.org_a), embeddings=True)
    embedded: list[int] = []
    real = writer.embed_texts
    monkeypatch.setattr(writer, "embed_texts", lambda texts: embedded.append(len(texts)) or real(texts))

    result = bank_import(principal=system_principal(empty_org), source=text)

    assert embedded == [1]  # the summary only; the memories keep the file's vectors
    merged = Memory.objects.get(pk=result.memory_ids[bank["merged"].id])
    assert list(merged.embedding) == pytest.approx(list(Memory.objects.get(pk=bank["merged"].pk).embedding))


def test_org_wide_export_and_import_are_for_admins_of_the_whole_org(cast, make_token):
    _, member = make_token(cast.org_a)  # the default scopes: no admin
    _, restricted = make_token(cast.org_a, scopes=["admin"], projects=[cast.project_a])

    with pytest.raises(Forbidden):
        export_scope(member)
    with pytest.raises(Forbidden):
        bank_import(principal=member, source="")
    with pytest.raises(InvalidInput) as caught:
        export_scope(restricted)
    assert caught.value.field == "project"
    assert export_scope(restricted, project="web-app").project == cast.project_a


def test_another_orgs_project_is_not_found(cast):
    with pytest.raises(NotFound):
        export_scope(system_principal(cast.org_a), project="billing")
    with pytest.raises(NotFound):
        bank_import(principal=system_principal(cast.org_a), source="", fmt="claude-md", project="billing")


def test_an_import_beyond_the_plans_limits_is_refused(cast, bank, empty_org):
    text = export_text(system_principal(cast.org_a))
    Organization.objects.filter(pk=empty_org.pk).update(plan="free")
    empty_org.refresh_from_db()

    with pytest.raises(PlanRequired):  # team memories, and the free plan has no teams
        bank_import(principal=system_principal(empty_org), source=text)
    for slug in ("a", "b", "c"):
        ProjectFactory(organization=empty_org, slug=slug)
    with pytest.raises(LimitExceeded) as caught:
        text = export_text(system_principal(cast.org_a), project="web-app")
        bank_import(principal=system_principal(empty_org), source=text)
    assert "new project" in caught.value.message


# --- other tools' files -----------------------------------------------------------------------------------

CLAUDE_MD = """# Storefront

## Testing
- Run `pytest -x` before pushing
- TODO

## Deploys
Deploys go out on Tuesdays after the standup; never on Fridays.
"""


def test_a_claude_md_becomes_memories_of_the_project_and_a_second_import_adds_nothing(cast):
    admin = system_principal(cast.org_a)

    result = bank_import(principal=admin, source=CLAUDE_MD, fmt="claude-md", source_name="CLAUDE.md")
    again = bank_import(principal=admin, source=CLAUDE_MD, fmt="claude-md")

    memories = {m.title: m for m in Memory.objects.filter(organization=cast.org_a)}
    assert set(memories) == {"Run `pytest -x` before pushing", "Deploys"}
    deploys = memories["Deploys"]
    assert (deploys.project, deploys.kind, deploys.origin, deploys.confidence) == (
        cast.project_a,
        "procedural",
        "recorded",
        0.8,
    )
    assert deploys.tags == ["claude-md", "deploys"] and deploys.description == "CLAUDE.md › Storefront"
    assert deploys.embedding is not None
    assert result.created["memory"] == 2
    assert result.skipped == [{"where": "line 5", "reason": "placeholder", "message": result.skipped[0]["message"]}]
    assert again.created["memory"] == 0 and {s["reason"] for s in again.skipped} == {"duplicate", "placeholder"}


def test_a_claude_md_needs_a_project_when_the_org_has_several(cast):
    ProjectFactory(organization=cast.org_a, slug="api")

    with pytest.raises(InvalidInput) as caught:
        bank_import(principal=system_principal(cast.org_a), source=CLAUDE_MD, fmt="claude-md")

    assert caught.value.field == "project"
    assert (
        bank_import(principal=system_principal(cast.org_a), source=CLAUDE_MD, fmt="claude-md", project="api").created[
            "memory"
        ]
        == 2
    )


def test_a_mem0_export_becomes_semantic_memories_with_their_times(cast):
    export = json.dumps(
        {
            "results": [
                {"id": "a1", "memory": "Prefers pnpm over npm", "user_id": "alex", "categories": ["tooling"],
                 "created_at": "2024-07-20T01:21:34-07:00"},
                {"id": "a2", "memory": "Deploys from the release branch", "created_at": "2024-07-21T09:00:00Z"},
            ]
        }
    )  # fmt: skip

    result = bank_import(principal=system_principal(cast.org_a), source=export, fmt="mem0")

    memory = Memory.objects.get(pk=result.memory_ids["mem0-a1"])
    assert (memory.kind, memory.content, memory.project) == ("semantic", "Prefers pnpm over npm", cast.project_a)
    assert memory.tags == ["mem0", "tooling", "user:alex"]
    assert memory.created_at.isoformat() == "2024-07-20T08:21:34+00:00"
    assert AuditEvent.objects.get(verb="bank.import").data["format"] == "mem0"


def test_a_bad_mem0_item_is_named_and_nothing_is_written(cast):
    export = json.dumps([{"memory": "Uses tabs"}, {"memory": "Likes tea", "categories": "drinks"}])

    with pytest.raises(ImportInvalid) as caught:
        bank_import(principal=system_principal(cast.org_a), source=export, fmt="mem0")

    assert str(caught.value.errors[0]) == "item 2, field categories: must be a list of strings"
    assert not Memory.objects.exists()


def test_imported_text_has_its_secrets_redacted(cast):
    key = "sk-ant-api03-" + "a" * 90
    result = bank_import(
        principal=system_principal(cast.org_a), source=f"## Keys\nThe staging key is {key} for now.\n", fmt="claude-md"
    )

    assert key not in Memory.objects.get(pk=next(iter(result.memory_ids.values()))).content
