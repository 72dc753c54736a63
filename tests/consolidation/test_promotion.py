"""Institutional promotion across scopes (docs/consolidation.md#institutional-promotion): the
per-organization pass, its daily job and ``manage.py promote_institutional``.

Org A (acme, moved to the Teams plan) has two teams: platform (projects web-app and api) and payments
(projects checkout and ledger). A lesson held, trusted, in two projects of platform is proposed for
platform; one held in both teams for the org. Every condition is needed, org B never counts, the plan
gates it, automatic promotion accepts at once, and a source set is proposed once.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AuditEvent
from consolidation.models import ReviewItem
from consolidation.promotion.rules import promotion_confidence
from consolidation.promotion.services import promotions_propose
from consolidation.review.selectors import promotion_list
from consolidation.review.services import review_decide
from consolidation.tasks import promotions_institutional_daily
from memories.models import Memory, MemoryLink
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, PlanRequired
from tests.consolidation.promotion_setup import lesson, teams_setup
from tests.consolidation.vectors import remember, spoke, vec
from tests.factories import ProjectFactory, TeamFactory


@pytest.fixture
def acme(cast) -> Any:
    return teams_setup(cast)


@pytest.fixture
def alice(acme):
    return acme.principal(acme.alice)


def proposals() -> list[ReviewItem]:
    return list(ReviewItem.objects.filter(kind=ReviewItem.KIND_PROMOTION).select_related("first").order_by("id"))


def sources_of(memory: Memory) -> list[str]:
    return sorted(
        MemoryLink.objects.filter(source=memory, kind=MemoryLink.KIND_CONSOLIDATES).values_list("target_id", flat=True)
    )


# --- team scope ----------------------------------------------------------------------------------------


def test_a_lesson_held_in_two_projects_of_a_team_is_proposed_for_the_team_with_lineage_to_each(acme, alice):
    web = lesson(alice, "web-app", 1, usage_count=4)
    api = lesson(alice, "api", 2, confidence=0.85)

    report = promotions_propose(principal=alice)

    (item,) = proposals()
    proposal = item.first
    assert (item.status, item.project_id, item.second_id) == ("pending", None, None)
    assert (proposal.team_id, proposal.project_id, proposal.scope) == (acme.platform.id, None, "team")
    assert proposal.state == Memory.STATE_PROPOSED and proposal.origin == Memory.ORIGIN_CONSOLIDATED
    assert (proposal.archived_reason, proposal.archived_at, proposal.tier) == ("", None, "archived")
    assert proposal.kind == Memory.KIND_PROCEDURAL and proposal.title == web.title  # the most trusted one
    assert sources_of(proposal) == sorted([web.id, api.id])
    expected = promotion_confidence([(0.9, 4), (0.85, 0)])
    assert expected.bonus > 0 and proposal.confidence == pytest.approx(expected.final, abs=1e-9)
    assert {m.state for m in Memory.objects.filter(pk__in=[web.id, api.id])} == {"active"}  # sources keep working
    (proposed,) = report.proposed
    assert (proposed.scope, proposed.team, proposed.status) == ("team", "platform", "pending")
    assert sorted(proposed.places) == ["api", "web-app"] and proposed.review_id == item.pk
    event = AuditEvent.objects.get(verb="promotion.propose")
    assert event.target_id == proposal.id and sorted(event.data["sources"]) == sorted([web.id, api.id])
    assert event.data["confidence"]["bonus"] == pytest.approx(expected.bonus)


@pytest.mark.parametrize(
    "missing",
    ["a second project", "confidence", "similarity", "procedural kind", "an active source"],
)
def test_one_missing_condition_proposes_nothing(acme, alice, missing):
    lesson(alice, "web-app", 1)
    if missing == "a second project":
        lesson(alice, "web-app", 2)
    elif missing == "confidence":
        lesson(alice, "api", 2, confidence=0.79)
    elif missing == "similarity":
        # the web-app lesson's twins are 0.9 alike; this one is 0.79 alike to a 0.79 twin only
        lesson(alice, "api", 2, similarity=0.79, hub=5)
    elif missing == "procedural kind":
        lesson(alice, "api", 2, kind=Memory.KIND_SEMANTIC)
    else:
        lesson(alice, "api", 2, state=Memory.STATE_ARCHIVED, archived_reason=Memory.ARCHIVED_MANUAL)

    report = promotions_propose(principal=alice)

    assert report.proposed == [] and proposals() == []
    assert not Memory.objects.filter(project__isnull=True).exists()


def test_a_pair_at_the_similarity_threshold_is_proposed_and_just_below_is_not(acme, alice, settings):
    settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD = 0.8
    lesson(alice, "web-app", 1, similarity=0.8)
    lesson(alice, "api", 2, similarity=0.8)
    lesson(alice, "web-app", 11, similarity=0.79, hub=10)
    lesson(alice, "api", 12, similarity=0.79, hub=10)

    (proposed,) = promotions_propose(principal=alice).proposed

    assert proposed.similarity == pytest.approx(0.8, abs=1e-6)


def test_three_projects_are_needed_when_the_setting_says_three(acme, alice, settings):
    settings.PROMOTION_MIN_PROJECTS = 3
    lesson(alice, "web-app", 1)
    lesson(alice, "api", 2)
    assert promotions_propose(principal=alice).proposed == []
    ProjectFactory(organization=acme.org_a, slug="cli", team=acme.platform)
    lesson(alice, "cli", 3)
    (proposed,) = promotions_propose(principal=alice).proposed
    assert sorted(proposed.places) == ["api", "cli", "web-app"]


def test_the_confidence_bar_is_a_setting(acme, alice, settings):
    settings.PROMOTION_MIN_CONFIDENCE = 0.95
    lesson(alice, "web-app", 1)
    lesson(alice, "api", 2)
    assert promotions_propose(principal=alice).proposed == []


# --- org scope ------------------------------------------------------------------------------------------


def test_a_lesson_held_in_two_teams_is_proposed_for_the_org_not_for_a_team(acme, alice):
    web = lesson(alice, "web-app", 1)
    checkout = lesson(alice, "checkout", 2)

    (proposed,) = promotions_propose(principal=alice).proposed

    assert (proposed.scope, proposed.team, sorted(proposed.places)) == ("org", None, ["payments", "platform"])
    (item,) = proposals()
    assert item.first.scope == "org" and sources_of(item.first) == sorted([web.id, checkout.id])


def test_projects_in_no_team_count_each_as_a_place_for_the_org(cast):
    cast.org_a.plan = "enterprise"
    cast.org_a.save(update_fields=["plan"])
    ProjectFactory(organization=cast.org_a, slug="mobile")
    alice = cast.principal(cast.alice)
    lesson(alice, "web-app", 1)
    lesson(alice, "mobile", 2)

    (proposed,) = promotions_propose(principal=alice).proposed

    assert proposed.scope == "org" and sorted(proposed.places) == ["mobile (no team)", "web-app (no team)"]


def test_with_automatic_promotion_team_memories_then_count_for_the_org_in_the_same_pass(acme, alice):
    acme.org_a.auto_promote_institutional = True
    acme.org_a.save(update_fields=["auto_promote_institutional"])
    for n, project in enumerate(["web-app", "api", "checkout", "ledger"], 1):
        lesson(alice, project, n)

    report = promotions_propose(principal=alice)

    scopes = sorted((p.scope, p.team or "") for p in report.proposed)
    assert scopes == [("org", ""), ("team", "payments"), ("team", "platform")]
    assert report.accepted == 3
    org_item = next(i for i in proposals() if i.first.scope == "org")
    linked = Memory.objects.filter(pk__in=sources_of(org_item.first))
    assert {m.scope for m in linked} == {"project", "team"}  # the promoted team memories are sources too


# --- tenancy and the plan --------------------------------------------------------------------------------


def test_another_orgs_similar_memories_never_count_and_never_see_the_proposal(acme, alice, make_token):
    acme.org_b.plan = "teams"
    acme.org_b.save(update_fields=["plan"])
    charlie = acme.principal(acme.charlie)
    lesson(alice, "web-app", 1)
    twin_b = lesson(charlie, "billing", 2)  # the very same lesson, in org B
    ProjectFactory(organization=acme.org_b, slug="invoices", team=TeamFactory(organization=acme.org_b))

    assert promotions_propose(principal=alice).proposed == []
    assert promotions_propose(principal=charlie).proposed == []

    lesson(alice, "api", 3)
    (proposed,) = promotions_propose(principal=alice).proposed
    assert twin_b.id not in {s["id"] for s in proposed.sources}
    assert list(promotion_list(charlie, status=None)) == []
    assert promotions_propose(principal=charlie).proposed == []
    assert not ReviewItem.objects.filter(organization=acme.org_b).exists()


@pytest.mark.parametrize("plan", ["free", "pro"])
def test_below_the_teams_plan_the_pass_is_refused_naming_the_plan(acme, plan):
    acme.org_a.plan = plan
    acme.org_a.save(update_fields=["plan"])
    alice = acme.principal(acme.alice)
    lesson(alice, "web-app", 1)
    lesson(alice, "api", 2)
    with pytest.raises(PlanRequired, match="institutional promotion needs the teams plan or above"):
        promotions_propose(principal=alice)
    assert proposals() == []


def test_only_unrestricted_org_admins_run_the_pass(acme, make_token):
    _, member = make_token(acme.org_a, scopes=["memories:read", "memories:write", "consolidation:run"])
    with pytest.raises(Forbidden, match="'admin' scope"):
        promotions_propose(principal=member)
    _, restricted = make_token(acme.org_a, scopes=["admin"], projects=[acme.project_a])
    with pytest.raises(Forbidden, match="not restricted"):
        promotions_propose(principal=restricted)
    with pytest.raises(Forbidden):
        promotions_propose(principal=acme.principal(acme.bob))


# --- automatic promotion, accept, reject ------------------------------------------------------------------


def test_with_automatic_promotion_on_the_proposal_is_active_at_once_and_audited_as_automatic(acme, alice):
    acme.org_a.auto_promote_institutional = True
    acme.org_a.save(update_fields=["auto_promote_institutional"])
    web, api = lesson(alice, "web-app", 1), lesson(alice, "api", 2)

    (proposed,) = promotions_propose(principal=alice).proposed

    (item,) = proposals()
    assert proposed.status == item.status == ReviewItem.STATUS_ACCEPTED and item.decided_by == "automatic"
    assert item.first.state == Memory.STATE_ACTIVE and item.first.scope == "team"
    event = AuditEvent.objects.get(verb="promotion.accept")
    assert event.data["automatic"] is True and event.data["sources"] == sorted([web.id, api.id])
    assert list(promotion_list(alice)) == []  # nothing waits


def test_an_automatic_promotion_over_the_memory_limit_waits_in_the_queue(acme, alice, monkeypatch):
    acme.org_a.auto_promote_institutional = True
    acme.org_a.save(update_fields=["auto_promote_institutional"])
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)

    def full(org: Any, *, adding: int) -> None:
        raise LimitExceeded("the teams plan allows 2 active memories; archive some or upgrade")

    monkeypatch.setattr("consolidation.promotion.services.memory_limit_check", full)
    (proposed,) = promotions_propose(principal=alice).proposed

    (item,) = promotion_list(alice)
    assert proposed.status == item.status == "pending" and item.first.state == Memory.STATE_PROPOSED
    assert not AuditEvent.objects.filter(verb="promotion.accept").exists()


def test_accepting_makes_the_team_memory_active_and_keeps_sources_and_lineage(acme, alice):
    web, api = lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    promotions_propose(principal=alice)
    (item,) = promotion_list(alice)

    decided = review_decide(principal=alice, item=item, decision="accept", note="true across platform")

    proposal = Memory.objects.get(pk=item.first_id)
    assert decided.status == "accepted" and decided.decided_by == "user:alice@acme.test"
    assert decided.reason == "true across platform"
    assert proposal.state == Memory.STATE_ACTIVE and proposal.archived_reason == "" and proposal.tier == "hot"
    assert sources_of(proposal) == sorted([web.id, api.id])
    assert {m.state for m in Memory.objects.filter(pk__in=[web.id, api.id])} == {"active"}
    event = AuditEvent.objects.get(verb="promotion.accept")
    assert event.data["automatic"] is False and event.actor == "user:alice@acme.test"
    with pytest.raises(Conflict, match="already decided: promoted"):
        review_decide(principal=alice, item=item, decision="reject")


def test_rejecting_promotes_nothing_and_the_same_sources_are_not_proposed_again(acme, alice):
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    promotions_propose(principal=alice)
    (item,) = promotion_list(alice)

    review_decide(principal=alice, item=item, decision="reject")

    proposal = Memory.objects.get(pk=item.first_id)
    assert ReviewItem.objects.get(pk=item.pk).status == "rejected"
    assert proposal.state == Memory.STATE_ARCHIVED and proposal.archived_reason == Memory.ARCHIVED_MANUAL
    assert proposal.tier == "archived" and proposal.archived_at is not None
    assert AuditEvent.objects.filter(verb="promotion.reject").count() == 1
    again = promotions_propose(principal=alice)
    assert again.proposed == [] and again.skipped == {"already_proposed": 1}
    assert len(proposals()) == 1


def test_a_promotion_takes_accept_or_reject_and_a_viewer_decides_nothing(acme, alice):
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    promotions_propose(principal=alice)
    (item,) = promotion_list(alice)
    with pytest.raises(InvalidInput, match="accept, reject") as refused:
        review_decide(principal=alice, item=item, decision="compatible")
    assert refused.value.field == "decision"
    with pytest.raises(Forbidden):
        review_decide(principal=acme.principal(acme.bob), item=item, decision="accept")
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


# --- idempotency ----------------------------------------------------------------------------------------


def test_running_again_proposes_nothing_new_even_when_a_third_project_joins(acme, alice):
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    assert len(promotions_propose(principal=alice).proposed) == 1

    again = promotions_propose(principal=alice)
    assert again.proposed == [] and again.skipped == {"already_proposed": 1}

    ProjectFactory(organization=acme.org_a, slug="cli", team=acme.platform)
    lesson(alice, "cli", 3)
    joined = promotions_propose(principal=alice)
    assert joined.proposed == [] and joined.skipped == {"overlaps_a_proposal": 1}
    assert len(proposals()) == 1


def test_a_lesson_already_active_at_team_scope_is_not_proposed(acme, alice):
    remember(
        alice,
        "Pin the database driver",
        spoke(0, 9, 0.9),
        content="Pin the driver version.",
        scope="team",
        project="web-app",
    )
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    report = promotions_propose(principal=alice)
    assert report.proposed == [] and report.skipped == {"known_at_scope": 1}


def test_a_dry_run_reports_the_proposal_and_writes_nothing(acme, alice):
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    (proposed,) = promotions_propose(principal=alice, dry_run=True).proposed
    assert proposed.status == "would_propose" and proposed.review_id is None and proposed.memory_id is None
    assert proposals() == [] and not Memory.objects.filter(project__isnull=True).exists()
    assert not AuditEvent.objects.filter(verb__startswith="promotion.").exists()


# --- the daily job and the command ------------------------------------------------------------------------


def test_the_daily_job_runs_each_org_on_the_teams_plan_only(acme, alice):
    charlie = acme.principal(acme.charlie)  # org B stays on Pro
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)
    ProjectFactory(organization=acme.org_b, slug="invoices")
    lesson(charlie, "billing", 3), lesson(charlie, "invoices", 4)

    totals = promotions_institutional_daily()

    assert totals == {"organizations": 1, "proposed": 1, "accepted": 0, "failed": 0}
    (item,) = proposals()
    assert item.organization_id == acme.org_a.id
    assert AuditEvent.objects.get(verb="promotion.propose").data["trigger"] == "scheduled"


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("promote_institutional", *args, stdout=out)
    return out.getvalue()


def test_the_command_previews_with_dry_run_then_proposes(acme, alice):
    lesson(alice, "web-app", 1), lesson(alice, "api", 2)

    preview = run_command("--org", "acme", "--dry-run")
    assert "would propose for team platform" in preview and "api, web-app" in preview
    assert proposals() == []

    output = run_command("--org", "acme")
    (item,) = proposals()
    assert f"proposed for team platform: {item.first.title!r} (review {item.pk}" in output
    assert "skipped 1: this set of sources was proposed before" in run_command("--org", "acme")


def test_the_command_fails_clearly_for_an_unknown_org_or_a_plan_without_promotion(acme):
    with pytest.raises(CommandError, match="organization 'nope' does not exist"):
        run_command("--org", "nope")
    with pytest.raises(CommandError, match="needs the teams plan"):
        run_command("--org", "globex")


def test_a_memory_in_no_place_is_never_a_candidate(acme, alice):
    """Org-scope memories are institutional already: they neither count nor get proposed."""
    remember(
        alice,
        "Org wide lesson",
        vec({0: 1.0}),
        content="An org-wide lesson everyone shares.",
        scope="org",
        confidence=0.95,
    )
    lesson(alice, "web-app", 1)
    assert promotions_propose(principal=alice).candidates == 1
