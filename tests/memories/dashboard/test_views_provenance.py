"""Dashboard: a memory's page shows its whole provenance — who, how, through which client, when, with
links to its session, its run and its sources — and its trust; the list shows each memory's one-line
label (docs/security/memory-poisoning.md#provenance)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.access import system_principal
from accounts.tokens.services import token_create
from memories.core.services import MemoryDraft, memories_create
from memories.models import Memory
from memories.trust.provenance import HOW_SYNTHESISED
from memories.trust.provenance_facts import ProvenanceInput
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def recorded_over_rest(cast) -> Memory:
    _, raw = token_create(organization=cast.org_a, label="laptop", created_by=cast.alice)
    api = APIClient(HTTP_USER_AGENT="claude-cli/2.1.197")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = {"title": "Pin the Node version", "description": "When builds differ", "outcome": "success",
            "content": "Commit an .nvmrc with the exact version and run nvm use in CI."}  # fmt: skip
    return Memory.objects.get(pk=api.post("/api/v1/memories", body, format="json").json()["id"])


def test_the_memory_page_shows_who_how_through_which_client_and_when(client, cast):
    memory = recorded_over_rest(cast)
    client.force_login(cast.bob)  # a viewer reads it too

    html = client.get(f"/memories/{memory.id}/").content.decode()

    assert 'id="provenance"' in html
    assert f"recorded by alice@acme.test (token laptop) via claude-cli 2.1 · {memory.created_at:%Y-%m-%d}" in html
    assert f"token <code>{memory.created_by_token.prefix}…</code> “laptop” created by alice@acme.test" in html
    assert "owner when it wrote" in html and "claude-cli/2.1.197" in html
    assert "trust-trusted" in html


def test_a_synthesis_links_its_run_and_its_sources_and_a_pending_one_says_it_waits(client, cast):
    alice = cast.principal(cast.alice)
    sources = [MemoryFactory(principal=alice, project="web-app") for _ in range(2)]
    Memory.objects.filter(pk=sources[1].pk).update(trust=Memory.TRUST_PENDING)
    sources[1].refresh_from_db()
    draft = MemoryDraft(title="Merged lesson", description="d", content="Both sources, merged.", outcome="success",
                        tags=[])  # fmt: skip
    (merged,) = memories_create(
        principal=system_principal(cast.org_a), drafts=[draft], project=cast.project_a,
        provenance=ProvenanceInput(how=HOW_SYNTHESISED, run_id="run_01example", sources=sources),
    )  # fmt: skip
    client.force_login(cast.alice)

    html = client.get(f"/memories/{merged.id}/").content.decode()

    assert 'href="/consolidation/runs/run_01example/"' in html
    assert all(f'href="/memories/{source.id}/"' in html for source in sources)
    assert "synthesised from 2 memories by consolidation" in html and "trust-pending" in html


def test_a_memory_older_than_provenance_is_described_and_says_so(client, cast):
    memory = Memory.objects.create(
        organization=cast.org_a, project=cast.project_a, title="Old lesson", description="From before",
        content="Written before provenance was recorded.", outcome="success", created_by_user=cast.alice,
    )  # fmt: skip
    client.force_login(cast.alice)

    html = client.get(f"/memories/{memory.id}/").content.decode()

    assert "Written before provenance was recorded" in html
    assert f"recorded by alice@acme.test · {memory.created_at:%Y-%m-%d}" in html


def test_the_list_shows_each_memorys_label_and_whether_it_waits_for_review(client, cast):
    memory = recorded_over_rest(cast)
    waiting = MemoryFactory(principal=cast.principal(cast.alice), project="web-app", title="A lesson waiting")
    Memory.objects.filter(pk=waiting.pk).update(trust=Memory.TRUST_PENDING)
    client.force_login(cast.alice)

    html = client.get("/memories/").content.decode()
    searched = client.get("/memories/", {"q": "Node version nvmrc"}).content.decode()

    label = f"recorded by alice@acme.test (token laptop) via claude-cli 2.1 · {memory.created_at:%Y-%m-%d}"
    assert label in html and label in searched
    assert html.count("waits for review") == 1
