"""The review for injection and the injection policy on the dashboard (memories/trust/views_injection.py,
templates/memories/trust/): admins see the memories waiting for review before injection in the review
queue, with their source, and clear them in one click; Settings → Trust shows the policy to everyone
and lets admins and owners change it. Viewers change nothing; another organization's memory is a 404."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Organization
from memories.models import Memory
from tests.factories import MemoryFactory

REVIEWS = "/consolidation/reviews/"
SETTINGS = "/settings/trust/"
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


# --- Settings → Trust ------------------------------------------------------------------------------------


def test_an_owner_changes_the_injection_policy_in_settings_audited(client, cast):
    owner = logged_in(client, cast.alice)
    page = owner.get(SETTINGS).content.decode()
    assert 'name="injection_policy" value="trusted" checked' in page
    response = owner.post(SETTINGS, {"injection_policy": "reviewed"})
    assert response.status_code == 302
    assert Organization.objects.get(pk=cast.org_a.pk).injection_policy == "reviewed"
    assert AuditEvent.objects.get(verb="organization.injection_policy").data == {"from": "trusted", "to": "reviewed"}
    assert 'value="reviewed" checked' in owner.get(SETTINGS).content.decode()


def test_an_unknown_policy_is_a_400_with_the_reason_and_changes_nothing(client, cast):
    response = logged_in(client, cast.alice).post(SETTINGS, {"injection_policy": "everything"})
    assert response.status_code == 400 and "must be one of trusted, reviewed, all" in response.content.decode()
    assert Organization.objects.get(pk=cast.org_a.pk).injection_policy == "trusted"


def test_a_viewer_reads_the_policy_but_cannot_change_it(client, cast):
    viewer = logged_in(client, cast.bob)
    page = viewer.get(SETTINGS).content.decode()
    assert "Admins and owners change this." in page and 'name="injection_policy"' not in page
    assert viewer.post(SETTINGS, {"injection_policy": "all"}).status_code == 403
    assert Organization.objects.get(pk=cast.org_a.pk).injection_policy == "trusted"


@pytest.mark.cross_tenant("settings-trust")
def test_an_owner_changes_only_their_own_orgs_policy(client, cast):
    logged_in(client, cast.charlie).post(SETTINGS, {"injection_policy": "all"})
    assert Organization.objects.get(pk=cast.org_b.pk).injection_policy == "all"
    assert Organization.objects.get(pk=cast.org_a.pk).injection_policy == "trusted"
