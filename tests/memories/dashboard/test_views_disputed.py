"""Dashboard: disputed (contradicting) memory pairs and their resolution by a member."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from memories.models import Memory, MemoryLink
from tests.factories import MemoryLinkFactory, memory_recorder

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dispute(agent):
    """Two contradicting memories of org A, linked the way the consolidation judge links them."""
    indentation = memory_recorder(description="Indentation")
    first = indentation(agent, title="Use tabs", content="Always indent with tabs.")
    second = indentation(agent, title="Use spaces", content="Always indent with 4 spaces.")
    return MemoryLinkFactory(
        source=first, target=second, kind="contradicts", weight=0.87, reason="One says tabs, the other spaces."
    )


def test_no_disputes_shows_an_empty_state(client, cast):
    client.force_login(cast.alice)
    response = client.get("/disputed/")
    assert response.status_code == 200 and "No open disputes" in response.content.decode()


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_a_dispute_shows_both_memories_side_by_side_with_the_judges_explanation(client, cast, dispute, who):
    client.force_login(getattr(cast, who))
    html = client.get("/disputed/").content.decode()
    assert 'aria-current="page">Disputed' in html
    for text in (
        "Always indent with tabs.",
        "Always indent with 4 spaces.",
        "One says tabs, the other spaces.",
        "0.87",
    ):
        assert text in html
    buttons = 'value="keep_first"' in html and 'value="keep_both"' in html and "/consolidation/" in html
    assert buttons is (who == "alice")


def test_keep_first_archives_the_second_as_superseded_and_is_audited(client, cast, dispute):
    client.force_login(cast.alice)
    response = client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_first"}, follow=True)
    assert response.redirect_chain[-1][0] == "/disputed/"
    html = response.content.decode()
    assert "Kept “Use tabs”" in html and "No open disputes" in html
    second = Memory.objects.get(pk=dispute.target_id)
    assert (second.state, second.archived_reason) == ("archived", "superseded")
    assert MemoryLink.objects.filter(source=dispute.source, target=second, kind="supersedes").exists()
    event = AuditEvent.objects.get(verb="contradiction.resolve")
    assert event.data["resolution"] == "keep_first" and event.actor == "user:alice@acme.test"
    # both memories' audit trails show the decision
    assert "contradiction.resolve" in client.get(f"/memories/{second.id}/").content.decode()


def test_keep_both_over_htmx_returns_the_resolved_card(client, cast, dispute):
    client.force_login(cast.alice)
    response = client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_both"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert f'id="dispute-{dispute.pk}"' in html and "Kept both memories" in html
    dispute.refresh_from_db()
    assert dispute.resolved_at is not None
    assert Memory.objects.filter(state="active").count() == 2


def test_resolving_twice_or_with_a_bad_choice_is_a_message_not_a_500(client, cast, dispute):
    client.force_login(cast.alice)
    bad = client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_all"}, **HX)
    assert bad.status_code == 400 and "resolution must be one of" in bad.content.decode()
    client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_second"})
    again = client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_first"}, follow=True)
    assert again.status_code == 200 and "already resolved" in again.content.decode()
    assert Memory.objects.get(pk=dispute.source_id).state == "archived"
    assert Memory.objects.get(pk=dispute.target_id).state == "active"


def test_a_viewer_cannot_resolve_a_dispute(client, cast, dispute):
    client.force_login(cast.bob)
    assert client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_first"}).status_code == 403
    dispute.refresh_from_db()
    assert dispute.resolved_at is None and not AuditEvent.objects.filter(verb="contradiction.resolve").exists()


@pytest.mark.cross_tenant("disputed-list", "disputed-resolve")
def test_another_org_cannot_see_or_resolve_the_dispute(client, cast, dispute):
    client.force_login(cast.charlie)
    assert "Use tabs" not in client.get("/disputed/").content.decode()
    assert client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_first"}).status_code == 404
    dispute.refresh_from_db()
    assert dispute.resolved_at is None


def test_anonymous_visitors_of_disputes_are_sent_to_the_login_page(client, dispute):
    assert client.get("/disputed/").status_code == 302
    response = client.post(f"/disputed/{dispute.pk}/resolve/", {"resolution": "keep_first"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
