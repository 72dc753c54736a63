"""The review queue (docs/consolidation.md#the-review-queue-and-disputes): pairs that consolidation set
aside because their texts may disagree wait here until a moderator decides in one click — "They
contradict" links them as a dispute, "They agree" lets the next run merge them. Audited; viewers read but
cannot act; another organization's item is a 404 (REST and dashboard)."""

from __future__ import annotations

import re

import pytest

from accounts.models import AuditEvent
from accounts.tokens.services import token_authenticate, token_create
from consolidation.models import ReviewItem
from consolidation.review.selectors import review_list
from consolidation.review.services import review_decide
from consolidation.validation import NOTE_MAX
from memories.models import Memory, MemoryLink
from memories.moderation.selectors import disputed_list
from reasoningbank.ai.llm import NoLLM
from reasoningbank.errors import Conflict, Forbidden, InvalidInput
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke
from tests.reasoningbank.secret_table import red_team_chunks, red_team_left

REVIEWS = "/api/v1/consolidation/reviews"
HX = {"HTTP_HX_REQUEST": "true"}
ALWAYS = "Always retry failed payment webhooks immediately."
NEVER = "Never retry failed payment webhooks immediately."


@pytest.fixture
def pending(cast, agent) -> ReviewItem:
    """Opposite twins 0.97 alike, set aside the way a run without an LLM leaves them
    (``consolidation.phases.judge.review_note``; tests/consolidation/test_conflicts.py runs that path)."""
    first = remember(agent, "Payment webhook retries", spoke(0, 1, 0.97), content=ALWAYS)
    second = remember(agent, "Retrying payment webhooks", spoke(0, 2, 0.97), content=NEVER)
    return ReviewItem.objects.create(
        organization=cast.org_a,
        project=cast.project_a,
        first=first,
        second=second,
        similarity=0.97,
        cues=["negation: one negates what the other states: retry"],
        reason="no LLM is configured to judge them",
    )


def decide_url(item: ReviewItem) -> str:
    return f"{REVIEWS}/{item.pk}/decide"


def states(item: ReviewItem) -> list[str]:
    return [Memory.objects.get(pk=pk).state for pk in (item.first_id, item.second_id)]


# --- the service -----------------------------------------------------------------------------------------


def test_they_contradict_links_the_pair_as_a_dispute_and_is_audited(cast, pending):
    alice = cast.principal(cast.alice)

    item = review_decide(principal=alice, item=pending, decision="contradicts", note="opposite retry advice")

    assert (item.status, item.decided_by) == ("contradicts", "user:alice@acme.test")
    assert item.reason == "opposite retry advice"
    link = MemoryLink.objects.get(kind=MemoryLink.KIND_CONTRADICTS)
    assert (link.source_id, link.target_id, link.resolved_at) == (pending.first_id, pending.second_id, None)
    assert [d.pk for d in disputed_list(alice)] == [link.pk]
    event = AuditEvent.objects.get(verb="review.decide")
    assert event.target_id == pending.first_id and event.data["other"] == pending.second_id
    assert event.data["decision"] == "contradicts" and event.data["link"] == link.pk
    assert states(pending) == ["active", "active"]


def test_they_agree_clears_the_pair_so_the_next_run_merges_it(cast, agent, pending):
    review_decide(principal=cast.principal(cast.alice), item=pending, decision="compatible")
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_COMPATIBLE
    assert not MemoryLink.objects.filter(kind=MemoryLink.KIND_CONTRADICTS).exists()

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.counters["duplicates_merged"] == 1 and run.counters["conflicts"] == 0
    assert sorted(states(pending)) == ["active", "archived"]


def test_a_pair_is_decided_once(cast, pending):
    alice = cast.principal(cast.alice)
    review_decide(principal=alice, item=pending, decision="compatible")
    with pytest.raises(Conflict, match=re.escape("already decided: they agree by user:alice@acme.test")):
        review_decide(principal=alice, item=pending, decision="contradicts")
    assert not MemoryLink.objects.filter(kind=MemoryLink.KIND_CONTRADICTS).exists()


@pytest.mark.parametrize(
    ("decision", "note", "field"),
    [("merge", "", "decision"), (None, "", "decision"), ("compatible", "x" * 2001, "note"), ("compatible", 5, "note")],
)
def test_a_bad_decision_or_note_names_the_field_and_changes_nothing(cast, pending, decision, note, field):
    with pytest.raises(InvalidInput) as refused:
        review_decide(principal=cast.principal(cast.alice), item=pending, decision=decision, note=note)
    assert refused.value.field == field
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


def test_a_viewer_cannot_decide(cast, pending):
    with pytest.raises(Forbidden):
        review_decide(principal=cast.principal(cast.bob), item=pending, decision="contradicts")
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


def test_the_queue_lists_pending_items_by_project(cast, pending):
    alice = cast.principal(cast.alice)
    assert list(review_list(alice)) == [pending]
    assert list(review_list(alice, project=cast.project_a)) == [pending]
    review_decide(principal=alice, item=pending, decision="compatible")
    assert list(review_list(alice)) == [] and list(review_list(alice, status=None)) == [pending]
    assert list(review_list(cast.principal(cast.charlie), status=None)) == []


# --- REST ------------------------------------------------------------------------------------------------


def test_rest_lists_the_pending_pairs_with_both_memories_similarity_and_cues(cast, token_client, pending):
    body = token_client(cast.org_a).get(REVIEWS).json()
    assert body["count"] == 1 and set(body) == {"count", "next", "previous", "results"}
    (item,) = body["results"]
    assert item["id"] == pending.pk and item["project"] == "web-app" and item["status"] == "pending"
    assert item["first"]["content"] == ALWAYS and item["second"]["content"] == NEVER
    assert item["similarity"] == pytest.approx(0.97, abs=1e-3) and any("negation" in c for c in item["cues"])


def test_rest_filters_by_status_and_project_and_refuses_unknown_ones(cast, token_client, pending):
    client = token_client(cast.org_a)
    assert client.get(REVIEWS, {"status": "compatible"}).json()["count"] == 0
    assert client.get(REVIEWS, {"status": "any", "project": "web-app"}).json()["count"] == 1
    bad = client.get(REVIEWS, {"status": "maybe"})
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["status"]
    assert client.get(REVIEWS, {"project": "nope"}).status_code == 404
    assert client.get(REVIEWS, {"sort": "x"}).status_code == 400


def test_rest_decides_a_pair(cast, token_client, pending):
    client = token_client(cast.org_a)
    response = client.post(decide_url(pending), {"decision": "contradicts", "note": "opposite"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "contradicts" and response.json()["reason"] == "opposite"
    again = client.post(decide_url(pending), {"decision": "compatible"}, format="json")
    assert again.status_code == 409 and "already decided" in again.json()["detail"]
    disputes = client.get("/api/v1/consolidation/disputes").json()["results"]
    assert [d["first"]["id"] for d in disputes] == [pending.first_id]


def test_a_dispute_note_is_scrubbed_everywhere_it_is_kept_and_a_token_in_it_revoked(cast, token_client, pending):
    _, raw = token_create(organization=cast.org_a, label="ci")
    note, *_ = red_team_chunks(NOTE_MAX - 100)
    client = token_client(cast.org_a)

    response = client.post(decide_url(pending), {"decision": "contradicts", "note": f"{raw}\n{note}"}, format="json")

    assert response.status_code == 200, response.json()
    item = ReviewItem.objects.get(pk=pending.pk)
    link = MemoryLink.objects.get(kind=MemoryLink.KIND_CONTRADICTS)
    audited = str(AuditEvent.objects.get(verb="review.decide").data)
    disputes = client.get("/api/v1/consolidation/disputes").content.decode()
    for kept in (response.content.decode(), item.reason, link.reason, audited, disputes):
        assert red_team_left(kept) == [] and raw not in kept
    assert item.reason.startswith("[REDACTED:reasoningbank_token]\n")
    assert token_authenticate(raw) is None


def test_every_red_team_format_is_scrubbed_from_the_notes_of_a_dashboard_decision(client, cast, pending):
    client.force_login(cast.alice)
    note, *_ = red_team_chunks(NOTE_MAX)
    client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "contradicts", "note": note})
    item = ReviewItem.objects.get(pk=pending.pk)
    assert item.status == "contradicts" and red_team_left(item.reason) == []
    assert red_team_left(client.get("/disputed/").content.decode()) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "merge"}, "decision"),
        ({}, "decision"),
        ({"decision": "compatible", "note": 5}, "note"),
        ({"decision": "compatible", "why": "x"}, "why"),
    ],
)
def test_rest_names_the_field_of_a_bad_decision(cast, token_client, pending, body, field):
    response = token_client(cast.org_a).post(decide_url(pending), body, format="json")
    assert response.status_code == 400 and list(response.json()["errors"]) == [field]
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


def test_rest_needs_the_write_scope_to_decide(cast, token_client, pending):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert reader.get(REVIEWS).status_code == 200
    assert reader.post(decide_url(pending), {"decision": "compatible"}, format="json").status_code == 403
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


@pytest.mark.cross_tenant("api-reviews", "api-review-decide")
def test_another_orgs_pair_is_absent_from_the_list_and_a_404_to_decide(cast, token_client, pending):
    charlie = token_client(cast.org_b)
    assert charlie.get(REVIEWS).json()["results"] == []
    for review_id in (pending.pk, "not-a-number", "9" * 30):
        response = charlie.post(f"{REVIEWS}/{review_id}/decide", {"decision": "compatible"}, format="json")
        assert response.status_code == 404, review_id
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


# --- dashboard ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_queue_page_shows_both_memories_the_similarity_and_the_cues(client, cast, pending, who):
    client.force_login(getattr(cast, who))
    html = client.get("/consolidation/reviews/").content.decode()
    assert ALWAYS in html and NEVER in html and "0.970" in html and "negation" in html
    buttons = 'value="contradicts"' in html and 'value="compatible"' in html and "hx-post" in html
    assert buttons is (who == "alice")
    assert "csrfmiddlewaretoken" in html or who == "bob"


def test_the_pairs_a_run_left_waiting_for_an_llm_are_listed_with_the_count_its_warning_gave(client, cast, agent):
    similar = [
        remember(agent, title, spoke(10, n, 0.87))
        for n, title in enumerate(["Use connection pools", "Pool database connections", "Reuse DB connections"], 11)
    ]
    run = run_cycle(agent, cast.project_a, NoLLM())
    warned = next(re.match(r"(\d+) pairs wait for an LLM", w) for w in run.warnings if "wait for an LLM to check" in w)
    client.force_login(cast.bob)

    html = client.get("/consolidation/reviews/").content.decode()

    assert warned is not None and int(warned.group(1)) == 3  # each pair of the three
    assert "Nothing waits for review" not in html and "No pair waits for a person's decision" in html
    waiting = html.split('id="waiting-for-llm"', 1)[1].split("</section>", 1)[0]
    assert f'data-waiting="{warned.group(1)}"' in waiting and f"/consolidation/runs/{run.id}/" in waiting
    assert all(f"/memories/{memory.id}/" in waiting for memory in similar)


def test_pairs_an_llm_has_judged_since_no_longer_wait_for_one(client, cast, agent):
    for n, title in enumerate(["Use connection pools", "Pool database connections", "Reuse DB connections"], 11):
        remember(agent, title, spoke(10, n, 0.87))
    run_cycle(agent, cast.project_a, NoLLM())
    run_cycle(agent, cast.project_a, cycle_llm())
    client.force_login(cast.alice)

    html = client.get("/consolidation/reviews/").content.decode()

    assert 'id="waiting-for-llm"' not in html and "Nothing waits for review" in html


def test_another_orgs_pairs_waiting_for_an_llm_are_not_listed(client, cast, agent):
    for n, title in enumerate(["Use connection pools", "Pool database connections", "Reuse DB connections"], 11):
        remember(agent, title, spoke(10, n, 0.87))
    run_cycle(agent, cast.project_a, NoLLM())
    client.force_login(cast.charlie)

    html = client.get("/consolidation/reviews/").content.decode()

    assert 'id="waiting-for-llm"' not in html and "Use connection pools" not in html


def test_they_contradict_over_htmx_returns_the_decided_card(client, cast, pending):
    client.force_login(cast.alice)
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "contradicts"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert f'id="review-{pending.pk}"' in html and "listed with the disputes" in html
    assert MemoryLink.objects.filter(kind=MemoryLink.KIND_CONTRADICTS).count() == 1
    assert "Payment webhook retries" in client.get("/disputed/").content.decode()


def test_they_agree_without_htmx_redirects_with_a_message(client, cast, pending):
    client.force_login(cast.alice)
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "compatible"}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == "/consolidation/reviews/"
    assert "a later consolidation run may merge them" in html and "Nothing waits for review" in html


def test_deciding_twice_or_badly_is_a_message_not_a_500(client, cast, pending):
    client.force_login(cast.alice)
    bad = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "merge"}, **HX)
    assert bad.status_code == 400 and "decision must be one of" in bad.content.decode()
    client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "compatible"})
    again = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "contradicts"}, **HX)
    assert again.status_code == 400 and "already decided" in again.content.decode()


def test_a_viewer_cannot_decide_on_the_dashboard(client, cast, pending):
    client.force_login(cast.bob)
    assert client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "compatible"}).status_code == 403
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING
    assert not AuditEvent.objects.filter(verb="review.decide").exists()


@pytest.mark.cross_tenant("consolidation-reviews", "consolidation-review-decide")
def test_another_org_neither_sees_nor_decides_the_pair_on_the_dashboard(client, cast, pending):
    client.force_login(cast.charlie)
    assert ALWAYS not in client.get("/consolidation/reviews/").content.decode()
    assert client.get("/consolidation/reviews/?project=web-app").status_code == 404
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "compatible"})
    assert response.status_code == 404
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING


def test_anonymous_visitors_of_the_queue_are_sent_to_the_login_page(client, pending):
    assert client.get("/consolidation/reviews/").status_code == 302
    response = client.post(f"/consolidation/reviews/{pending.pk}/decide/", {"decision": "compatible"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
