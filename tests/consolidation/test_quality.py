"""The quality report per project (docs/consolidation.md#the-review-queue-and-disputes): duplicate rate,
open contradictions, pairs waiting for review, what the write gate refused, merges undone — in total and
per week — over REST and on the dashboard; another organization's project is a 404 and its data never
counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from consolidation.models import ReviewItem
from consolidation.quality.selectors import quality_report
from memories.core.services import REJECTED_VERB
from memories.models import Memory
from memories.moderation.services import memory_unmerge
from tests.consolidation.vectors import remember, vec
from tests.factories import MemoryLinkFactory

QUALITY = "/api/v1/projects/web-app/quality"
GOOD = {
    "title": "Wrap errors with context",
    "description": "When a service call fails deep in a handler",
    "content": "Use fmt.Errorf with %w so callers can unwrap and log the whole chain.",
    "outcome": "success",
}


@pytest.fixture
def bank(cast, agent, token_client, settings):
    """Ten memories of web-app: 1 archived as a duplicate, 2 merged into a synthesis, 1 synthesis
    un-merged; 2 contradictions (1 open); 2 review items (1 pending); the gate refused 2 writes (one
    three weeks ago) and answered 1 near copy. Org B has some of everything too."""
    memories = [remember(agent, f"Lesson {n} about deploys", vec({n: 1.0})) for n in range(1, 8)]
    now = timezone.now()
    Memory.objects.filter(pk=memories[0].pk).update(state="archived", archived_reason="duplicate", archived_at=now)
    Memory.objects.filter(pk__in=[m.pk for m in memories[1:3]]).update(
        state="archived", archived_reason="consolidated", archived_at=now
    )
    MemoryLinkFactory(source=memories[3], target=memories[4], kind="contradicts")
    MemoryLinkFactory(source=memories[4], target=memories[5], kind="contradicts", resolved_at=now)
    for (first, second), status in (((5, 6), "pending"), ((3, 6), "compatible")):
        ReviewItem.objects.create(
            organization=cast.org_a,
            project=cast.project_a,
            first=memories[first],
            second=memories[second],
            similarity=0.96,
            status=status,
        )
    # an un-merge: a synthesis (origin consolidated) with one archived source, undone by a moderator
    synthesis = remember(agent, "Deploy lessons, merged", vec({20: 1.0}), origin="consolidated")
    source = remember(agent, "Deploy lesson, a source", vec({21: 1.0}))
    Memory.objects.filter(pk=source.pk).update(
        state="archived", archived_reason="consolidated", archived_at=now, consolidated_into=synthesis
    )
    memory_unmerge(principal=cast.principal(cast.alice), memory=Memory.objects.get(pk=synthesis.pk))
    # the write gate: two refusals (one of them three weeks old) and one near copy
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 0.97
    client = token_client(cast.org_a, projects=[cast.project_a])
    assert client.post("/api/v1/memories", {**GOOD, "title": "TODO"}, format="json").status_code == 422
    assert client.post("/api/v1/memories", {**GOOD, "content": "Short."}, format="json").status_code == 422
    assert client.post("/api/v1/memories", GOOD, format="json").status_code == 201
    near = client.post("/api/v1/memories", {**GOOD, "content": GOOD["content"] + " Really."}, format="json")
    assert near.json()["duplicate_reason"] == "near_copy"
    old = AuditEvent.objects.filter(verb=REJECTED_VERB, data__reason="placeholder").get()
    AuditEvent.objects.filter(pk=old.pk).update(created_at=now - timedelta(weeks=3))
    # org B: none of this counts for acme's web-app
    theirs = token_client(cast.org_b, projects=[cast.project_b])
    theirs.post("/api/v1/memories", {**GOOD, "content": "Short."}, format="json")
    return memories


def test_the_report_counts_the_projects_quality_figures(cast, bank):
    report = quality_report(cast.principal(cast.alice), cast.project_a)

    # 7 lessons + the un-merged synthesis and its source + the recorded one
    assert (report.memories, report.active) == (10, 6)
    assert (report.duplicates, report.consolidated) == (1, 2)
    assert report.duplicate_rate == pytest.approx(0.3)
    assert (report.open_contradictions, report.waiting_for_review) == (1, 1)
    assert report.rejected == 2 and report.rejected_by_reason == {"placeholder": 1, "too_short": 1}
    assert (report.near_copies, report.unmerged) == (1, 1)


def test_the_weekly_series_covers_twelve_weeks_with_this_week_last(cast, bank):
    weeks = quality_report(cast.principal(cast.alice), cast.project_a).weeks
    assert len(weeks) == 12 and weeks[-1].start <= timezone.localdate() < weeks[-1].start + timedelta(days=7)
    assert [w.start.weekday() for w in weeks] == [0] * 12
    this, three_ago = weeks[-1], weeks[-4]
    assert (this.rejected, three_ago.rejected) == (1, 1)
    assert (this.merged, this.near_copies, this.unmerged, this.contradictions, this.reviews) == (3, 1, 1, 2, 2)
    assert sum(w.rejected for w in weeks) == 2


def test_an_empty_project_has_a_zero_report(cast):
    report = quality_report(cast.principal(cast.alice), cast.project_a)
    assert (report.memories, report.duplicate_rate, report.rejected, report.unmerged) == (0, 0.0, 0, 0)
    assert all(w.merged == w.rejected == 0 for w in report.weeks)


# --- REST ------------------------------------------------------------------------------------------------


def test_rest_answers_the_report(cast, token_client, bank):
    response = token_client(cast.org_a, scopes=["memories:read"]).get(QUALITY)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["project"] == "web-app" and body["memories"] == 10 and body["duplicate_rate"] == pytest.approx(0.3)
    assert (body["open_contradictions"], body["waiting_for_review"], body["rejected"], body["unmerged"]) == (1, 1, 2, 1)
    assert body["rejected_by_reason"] == {"placeholder": 1, "too_short": 1} and body["near_copies"] == 1
    series = {"week", "merged", "rejected", "near_copies", "unmerged", "contradictions", "reviews"}
    assert len(body["weeks"]) == 12 and set(body["weeks"][-1]) == series


def test_rest_takes_the_number_of_weeks_and_refuses_bad_ones(cast, token_client, bank):
    client = token_client(cast.org_a)
    assert len(client.get(QUALITY, {"weeks": 4}).json()["weeks"]) == 4
    for bad in ({"weeks": 0}, {"weeks": 53}, {"weeks": "many"}, {"weeks": ""}, {"since": "2026-01-01"}):
        response = client.get(QUALITY, bad)
        assert response.status_code == 400, bad
        assert list(response.json()["errors"]) == list(bad)


def test_a_token_limited_to_another_project_gets_a_404(cast, token_client, bank):
    from tests.factories import ProjectFactory

    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    assert token_client(cast.org_a, projects=[mobile]).get(QUALITY).status_code == 404


@pytest.mark.cross_tenant("api-project-quality")
def test_another_orgs_project_is_a_404_and_its_data_never_counts(cast, token_client, bank):
    charlie = token_client(cast.org_b)
    response = charlie.get(QUALITY)
    assert response.status_code == 404 and "web-app" in response.json()["detail"]
    theirs = charlie.get("/api/v1/projects/billing/quality").json()
    assert theirs["memories"] == 0 and theirs["rejected"] == 1


# --- dashboard ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_quality_page_shows_the_figures_and_a_chart_per_series(client, cast, bank, who):
    client.force_login(getattr(cast, who))
    response = client.get("/consolidation/quality/?project=web-app")
    html = response.content.decode()
    assert response.status_code == 200 and 'aria-current="page">Quality' in html
    assert 'id="duplicate-rate">30%' in html
    for label in ("open contradictions", "waiting for review", "junk kept out by the write gate", "merges undone"):
        assert label in html
    assert html.count('<svg class="chart"') == 6 and "too_short" in html
    assert "/consolidation/reviews/?project=web-app" in html


def test_the_quality_page_defaults_to_the_first_project(client, cast, bank):
    client.force_login(cast.alice)
    assert 'id="duplicate-rate">30%' in client.get("/consolidation/quality/").content.decode()


@pytest.mark.cross_tenant("consolidation-quality")
def test_another_org_cannot_see_the_projects_quality(client, cast, bank):
    client.force_login(cast.charlie)
    assert client.get("/consolidation/quality/?project=web-app").status_code == 404
    html = client.get("/consolidation/quality/").content.decode()
    assert "billing" in html.lower() and 'id="duplicate-rate">0%' in html


def test_a_project_without_memories_says_how_to_get_some_instead_of_drawing_empty_charts(client, cast):
    client.force_login(cast.alice)
    html = client.get("/consolidation/quality/?project=web-app").content.decode()
    assert '<svg class="chart"' not in html
    assert "Nothing to chart yet" in html and "Connect an agent" in html and 'href="/settings/tokens/"' in html


def test_a_project_where_nothing_happened_yet_points_at_consolidation_instead_of_empty_charts(client, cast, agent):
    remember(agent, "Lesson about deploys", vec({1: 1.0}))
    client.force_login(cast.bob)
    html = client.get("/consolidation/quality/?project=web-app").content.decode()
    assert '<svg class="chart"' not in html
    assert "Nothing to chart yet" in html and 'href="/consolidation/"' in html
