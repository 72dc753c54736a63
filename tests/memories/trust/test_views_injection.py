"""The review for injection on the dashboard (memories/trust/views_injection.py, templates/memories/trust/):
admins see the memories waiting for review before injection in the review queue, with their source, and
clear them in one click. Viewers change nothing; another organization's memory is a 404. (Settings →
Trust: test_views_policy.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from memories.models import Memory
from tests.factories import MemoryFactory

REVIEWS = "/consolidation/reviews/"
HX = {"HTTP_HX_REQUEST": "true"}
TITLE = "Deploy with the release script"


def clear_url(memory: Memory) -> str:
    return f"/memories/{memory.id}/clear-for-injection/"


@pytest.fixture
def pending(agent: Any) -> Memory:
    return MemoryFactory(principal=agent, title=TITLE, trust=Memory.TRUST_PENDING)


def logged_in(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


def test_an_admin_sees_the_memories_waiting_for_review_in_the_review_queue_with_their_source(client, cast, pending):
    page = logged_in(client, cast.alice).get(REVIEWS).content.decode()
    section = page.split('id="injection-review"', 1)[1].split("Pairs that may disagree", 1)[0]
    assert TITLE in section and f"recorded by token {pending.created_by_token.label}" in section
    assert f'action="{clear_url(pending)}"' in section


def test_a_viewer_sees_no_such_section_and_cannot_clear(client, cast, pending):
    viewer = logged_in(client, cast.bob)
    assert 'id="injection-review"' not in viewer.get(REVIEWS).content.decode()
    assert viewer.post(clear_url(pending)).status_code == 403
    assert Memory.objects.get(pk=pending.pk).trust == Memory.TRUST_PENDING


def test_clearing_in_one_click_answers_the_cleared_card_and_is_audited(client, cast, pending):
    response = logged_in(client, cast.alice).post(clear_url(pending), **HX)
    assert response.status_code == 200
    assert "Cleared for injection" in response.content.decode()
    pending.refresh_from_db()
    assert (pending.trust, pending.reviewed_by) == (Memory.TRUST_TRUSTED, cast.alice)
    assert AuditEvent.objects.filter(verb="memory.injection_clear", target_id=pending.id).count() == 1
    assert TITLE not in client.get(REVIEWS).content.decode().split('id="injection-review"', 1)[1]


def test_without_htmx_clearing_redirects_back_to_the_review_queue_with_a_message(client, cast, pending):
    response = logged_in(client, cast.alice).post(clear_url(pending), {"next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == f"{REVIEWS}#injection-review"
    again = client.post(clear_url(pending), **HX)  # already trusted: a clear message, not a 500
    assert again.status_code == 400 and "already trusted" in again.content.decode()


@pytest.mark.cross_tenant("memory-injection-clear")
def test_another_orgs_admin_neither_sees_nor_clears_the_memory(client, cast, pending):
    charlie = logged_in(client, cast.charlie)
    assert TITLE not in charlie.get(REVIEWS).content.decode()
    assert charlie.post(clear_url(pending)).status_code == 404
    assert Memory.objects.get(pk=pending.pk).trust == Memory.TRUST_PENDING
