"""Institutional promotion over REST and in the dashboard (docs/consolidation.md#institutional-promotion): an
org admin runs the pass (``POST /api/v1/consolidation/promotions``, the review queue's button); proposals are
listed and decided with the review queue (``…/reviews?kind=promotion``, ``…/decide`` with accept / reject,
htmx on the page). Viewers and tokens without ``admin`` get a 403, lower plans a ``plan_required`` 403,
another org a 404 or nothing."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from consolidation.models import ReviewItem
from consolidation.promotion.services import promotions_propose
from memories.models import Memory
from tests.consolidation.promotion_setup import lesson, teams_setup

PROMOTIONS = "/api/v1/consolidation/promotions"
REVIEWS = "/api/v1/consolidation/reviews"
HX = {"HTTP_HX_REQUEST": "true"}
ADMIN = ["admin", "memories:read", "memories:write"]


@pytest.fixture
def acme(cast):
    return teams_setup(cast)


@pytest.fixture
def twins(acme):
    alice = acme.principal(acme.alice)
    return [lesson(alice, "web-app", 1, usage_count=3), lesson(alice, "api", 2)]


@pytest.fixture
def pending(acme, twins):
    promotions_propose(principal=acme.principal(acme.alice))
    return ReviewItem.objects.get(kind=ReviewItem.KIND_PROMOTION)


# --- REST: running the pass -------------------------------------------------------------------------------


def test_an_admin_token_runs_the_pass_and_gets_the_proposals(acme, token_client, twins):
    response = token_client(acme.org_a, scopes=ADMIN).post(PROMOTIONS, {}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dry_run"] is False and body["candidates"] == 2 and body["accepted"] == 0 and body["skipped"] == {}
    (proposal,) = body["proposed"]
    item = ReviewItem.objects.get(kind=ReviewItem.KIND_PROMOTION)
    assert proposal["review_id"] == item.pk and proposal["memory_id"] == item.first_id
    assert (proposal["status"], proposal["scope"], proposal["team"]) == ("pending", "team", "platform")
    assert proposal["places"] == ["api", "web-app"]
    assert sorted(s["id"] for s in proposal["sources"]) == sorted(m.id for m in twins)
    assert proposal["confidence"] == pytest.approx(min(0.99, proposal["weighted"] + proposal["bonus"]), abs=1e-3)


def test_a_dry_run_over_rest_writes_nothing(acme, token_client, twins):
    body = token_client(acme.org_a, scopes=ADMIN).post(PROMOTIONS, {"dry_run": True}, format="json").json()
    assert body["dry_run"] is True and [p["status"] for p in body["proposed"]] == ["would_propose"]
    assert not ReviewItem.objects.exists()


@pytest.mark.parametrize(("body", "field"), [({"dry_run": "yes"}, "dry_run"), ({"force": True}, "force")])
def test_a_bad_body_names_the_field(acme, token_client, twins, body, field):
    response = token_client(acme.org_a, scopes=ADMIN).post(PROMOTIONS, body, format="json")
    assert response.status_code == 400 and list(response.json()["errors"]) == [field]
    assert not ReviewItem.objects.exists()


def test_without_the_admin_scope_or_restricted_to_a_project_it_is_a_403(acme, token_client, twins):
    viewer = token_client(acme.org_a, scopes=["memories:read"])
    member = token_client(acme.org_a)  # the default agent scopes
    restricted = token_client(acme.org_a, scopes=ADMIN, projects=[acme.project_a])
    for client in (viewer, member, restricted):
        assert client.post(PROMOTIONS, {}, format="json").status_code == 403
    assert not ReviewItem.objects.exists()


@pytest.mark.parametrize("plan", ["free", "pro"])
def test_below_the_teams_plan_it_is_a_plan_required_403(acme, token_client, twins, plan):
    acme.org_a.plan = plan
    acme.org_a.save(update_fields=["plan"])
    response = token_client(acme.org_a, scopes=ADMIN).post(PROMOTIONS, {}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "plan_required"
    assert "needs the teams plan" in response.json()["detail"]
    assert not ReviewItem.objects.exists()


@pytest.mark.cross_tenant("api-promotions")
def test_another_orgs_admin_runs_the_pass_on_its_own_org_only(acme, token_client, twins):
    acme.org_b.plan = "teams"
    acme.org_b.save(update_fields=["plan"])
    body = token_client(acme.org_b, scopes=ADMIN).post(PROMOTIONS, {}, format="json").json()
    assert body["candidates"] == 0 and body["proposed"] == []
    assert not ReviewItem.objects.exists() and not Memory.objects.filter(project__isnull=True).exists()


# --- REST: listing and deciding proposals ----------------------------------------------------------------


def test_the_review_list_shows_a_proposal_with_its_scope_sources_and_confidence(acme, token_client, pending):
    client = token_client(acme.org_a, scopes=["memories:read"])
    (item,) = client.get(REVIEWS, {"kind": "promotion"}).json()["results"]
    assert (item["id"], item["kind"], item["project"], item["second"]) == (pending.pk, "promotion", None, None)
    assert item["first"]["id"] == pending.first_id and item["first"]["state"] == "proposed"
    promotion = item["promotion"]
    assert (promotion["scope"], promotion["team"]) == ("team", "platform")
    assert promotion["confidence"] == pytest.approx(pending.first.confidence, abs=1e-4)
    assert sorted(s["project"] for s in promotion["sources"]) == ["api", "web-app"]
    assert {s["state"] for s in promotion["sources"]} == {"active"}
    assert client.get(REVIEWS, {"kind": "conflict"}).json()["count"] == 0
    assert client.get(REVIEWS, {"kind": "merge"}).status_code == 400


def test_a_proposal_is_accepted_over_rest_and_then_serves_as_a_team_memory(acme, token_client, pending):
    client = token_client(acme.org_a)
    response = client.post(f"{REVIEWS}/{pending.pk}/decide", {"decision": "accept"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "accepted" and response.json()["first"]["state"] == "active"
    listed = client.get("/api/v1/memories", {"scope": "team", "project": "api"}).json()["results"]
    assert [m["id"] for m in listed] == [pending.first_id]
    again = client.post(f"{REVIEWS}/{pending.pk}/decide", {"decision": "reject"}, format="json")
    assert again.status_code == 409


def test_a_pair_decision_on_a_proposal_names_the_field(acme, token_client, pending):
    response = token_client(acme.org_a).post(
        f"{REVIEWS}/{pending.pk}/decide", {"decision": "compatible"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()["errors"]) == ["decision"]
    assert ReviewItem.objects.get(pk=pending.pk).status == "pending"


def test_a_token_of_another_team_neither_sees_nor_decides_a_team_proposal(acme, token_client, pending):
    checkout = acme.org_a.projects.get(slug="checkout")
    payments_only = token_client(acme.org_a, projects=[checkout])
    assert payments_only.get(REVIEWS, {"kind": "promotion"}).json()["count"] == 0
    response = payments_only.post(f"{REVIEWS}/{pending.pk}/decide", {"decision": "accept"}, format="json")
    assert response.status_code == 404
    platform_only = token_client(acme.org_a, projects=[acme.project_a])
    assert platform_only.get(REVIEWS, {"kind": "promotion"}).json()["count"] == 1


def test_another_org_neither_lists_nor_decides_a_proposal(acme, token_client, pending):
    charlie = token_client(acme.org_b)
    assert charlie.get(REVIEWS, {"status": "any"}).json()["results"] == []
    assert charlie.post(f"{REVIEWS}/{pending.pk}/decide", {"decision": "accept"}, format="json").status_code == 404
    assert ReviewItem.objects.get(pk=pending.pk).status == "pending"


# --- dashboard ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_queue_page_lists_proposals_with_source_projects_and_confidence(client, acme, pending, who):
    client.force_login(getattr(acme, who))
    html = client.get("/consolidation/reviews/").content.decode()
    assert "Proposed for team <strong>platform</strong>" in html
    assert f"confidence <strong>{pending.first.confidence:.2f}</strong>" in html
    assert "<td>api</td>" in html and "<td>web-app</td>" in html
    assert ('value="accept"' in html and 'value="reject"' in html) is (who == "alice")
    assert ("Look for promotions now" in html) is (who == "alice")


def test_promote_over_htmx_returns_the_decided_card(client, acme, pending):
    client.force_login(acme.alice)
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "accept"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert f'id="review-{pending.pk}"' in html and "Promoted" in html
    assert Memory.objects.get(pk=pending.first_id).state == Memory.STATE_ACTIVE
    assert AuditEvent.objects.filter(verb="promotion.accept").count() == 1


def test_reject_without_htmx_redirects_with_a_message(client, acme, pending):
    client.force_login(acme.alice)
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "reject"}, follow=True)
    assert response.redirect_chain[-1][0] == "/consolidation/reviews/"
    assert "will not be proposed again" in response.content.decode()
    assert ReviewItem.objects.get(pk=pending.pk).status == "rejected"


def test_the_button_runs_the_pass_for_an_admin_and_is_a_403_for_a_viewer(client, acme, twins):
    client.force_login(acme.bob)
    assert client.post("/consolidation/promotions/run/").status_code == 403
    assert not ReviewItem.objects.exists()
    client.force_login(acme.alice)
    response = client.post("/consolidation/promotions/run/", follow=True)
    assert "1 promotion proposed among 2 trusted procedural memories" in response.content.decode()
    assert ReviewItem.objects.filter(kind=ReviewItem.KIND_PROMOTION).count() == 1


def test_below_the_teams_plan_the_page_says_so_and_the_button_is_refused(client, acme, twins):
    acme.org_a.plan = "pro"
    acme.org_a.save(update_fields=["plan"])
    client.force_login(acme.alice)
    html = client.get("/consolidation/reviews/").content.decode()
    assert "Institutional promotion needs the Teams plan" in html and "Look for promotions now" not in html
    response = client.post("/consolidation/promotions/run/", follow=True)
    assert "needs the teams plan" in response.content.decode()
    assert not ReviewItem.objects.exists()


@pytest.mark.cross_tenant("consolidation-promotions-run")
def test_another_orgs_admin_neither_sees_nor_decides_nor_proposes_in_this_org(client, acme, pending):
    acme.org_b.plan = "teams"
    acme.org_b.save(update_fields=["plan"])
    client.force_login(acme.charlie)
    html = client.get("/consolidation/reviews/").content.decode()
    assert "Proposed for team" not in html
    assert client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "accept"}).status_code == 404
    client.post("/consolidation/promotions/run/")
    assert ReviewItem.objects.get().pk == pending.pk and ReviewItem.objects.get().status == "pending"
