"""Dashboard: the memory list (search, filters, pagination, htmx partial), the detail page and the
member-only writes (edit, archive, restore, un-merge)."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from memories.confidence.services import memory_feedback
from memories.context.services import summary_store
from memories.models import Memory, MemorySignal
from tests.factories import MemoryLinkFactory, memory_recorder, summary_make

HX = {"HTTP_HX_REQUEST": "true"}


record = memory_recorder(title="Pin flaky test seeds", tags=["testing"])


def login(client, user):
    client.force_login(user)
    return client


# --- the list -------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_memory_list_renders_for_owner_and_viewer(client, cast, agent, who):
    memory = record(agent)
    response = login(client, getattr(cast, who)).get("/memories/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html and memory.title in html and f"/memories/{memory.id}/" in html
    assert 'aria-current="page">Memories' in html


def test_the_confidence_bar_shows_alpha_and_beta_in_its_tooltip(client, cast, agent):
    memory = record(agent)
    html = login(client, cast.alice).get("/memories/").content.decode()
    assert f"α={memory.alpha:.2f}, β={memory.beta:.2f}" in html
    assert '<rect height="1" width="80"/>' in html  # an SVG bar: no inline style under the CSP


def test_an_htmx_request_gets_only_the_results_partial(client, cast, agent):
    memory = record(agent)
    response = login(client, cast.alice).get("/memories/?kind=procedural", **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="results"' in html and memory.title in html
    assert 'name="min_confidence"' not in html  # the filter form is not part of the partial


def test_a_history_restore_request_gets_the_whole_page(client, cast, agent):
    response = login(client, cast.alice).get("/memories/", HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX)
    assert "<html" in response.content.decode()


def test_the_search_box_finds_a_recorded_memory_without_recording_usage(client, cast, agent):
    wanted = record(agent, title="Pin flaky test seeds")
    record(agent, title="Cache docker layers", description="Slow CI builds", content="Order the Dockerfile well.")
    html = login(client, cast.alice).get("/memories/?q=flaky+seeds").content.decode()
    assert wanted.title in html and "1 match for" in html and "Cache docker layers" not in html
    wanted.refresh_from_db()
    assert wanted.usage_count == 0 and not MemorySignal.objects.filter(memory=wanted).exists()


def test_the_search_counts_its_matches_as_the_api_does_and_names_the_near_identical_ones_it_folded(
    client, cast, agent, token_client
):
    """Two memories that say the same thing are one row (the other folded into it), as in the API's answer:
    the count is still every match, the API's ``total_found``, not the rows shown."""
    original = record(agent, title="Pin flaky test seeds")
    # what the write gate lets through only from elsewhere (an import, another project): the same meaning
    twin = record(agent, title="Seed the random generator of flaky tests", content="Make flaky test runs repeatable.")
    Memory.objects.filter(pk=twin.pk).update(embedding=original.embedding)
    record(agent, title="Retry flaky tests once", content="Retry a flaky test once in CI, then quarantine it.")
    record(agent, title="Quarantine flaky tests", content="Move a flaky test to a quarantine job and file a bug.")
    api = token_client(cast.org_a).post("/api/v1/memories/search", {"query": "flaky test"}, format="json").json()

    html = login(client, cast.alice).get("/memories/?q=flaky+test").content.decode()

    shown = re.search(r'id="search-count" data-found="(\d+)" data-shown="(\d+)">(\d+) matches for', html)
    assert shown is not None and api["total_found"] == 4 and len(api["memories"]) == 3
    assert [int(n) for n in shown.groups()] == [api["total_found"], len(api["memories"]), api["total_found"]]
    folded = next(hit for hit in api["memories"] if hit.get("duplicates"))
    assert {folded["id"], *folded["duplicates"]} == {original.id, twin.id}
    assert f"/memories/{folded['duplicates'][0]}/" in html.split("data-duplicates", 1)[1].split("</div>", 1)[0]


def test_search_respects_the_kind_filter_on_its_hits(client, cast, agent):
    record(agent, title="Pin flaky test seeds", kind="semantic")
    html = login(client, cast.alice).get("/memories/?q=flaky&kind=procedural").content.decode()
    assert "Pin flaky test seeds" not in html and "No memory matches this search." in html


def test_searching_archived_memories_matches_their_title(client, cast, agent):
    memory = record(agent, title="Pin flaky test seeds")
    Memory.objects.filter(pk=memory.pk).update(state="archived", archived_reason="manual", tier="archived")
    html = login(client, cast.alice).get("/memories/?q=flaky&state=archived").content.decode()
    assert memory.title in html and "archived ones are matched by title" in html


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("kind=semantic", "Fact about the API", "Pin flaky test seeds"),
        ("outcome=failure", "Fact about the API", "Pin flaky test seeds"),
        ("tag=api", "Fact about the API", "Pin flaky test seeds"),
        ("state=archived", "Old archived trick", "Pin flaky test seeds"),
        ("state=any", "Old archived trick", "nothing-hidden"),
        ("min_confidence=0.9", "nothing-shown", "Pin flaky test seeds"),
        ("max_confidence=0.9&project=web-app&scope=project", "Pin flaky test seeds", "nothing-hidden"),
        ("tier=hot&sort=title", "Fact about the API", "Old archived trick"),
    ],
)
def test_filters_narrow_the_list(client, cast, agent, query, shown, hidden):
    record(agent, title="Pin flaky test seeds")
    record(agent, title="Fact about the API", kind="semantic", outcome="failure", tags=["api"])
    old = record(agent, title="Old archived trick")
    Memory.objects.filter(pk=old.pk).update(state="archived", archived_reason="stale", tier="archived")
    response = login(client, cast.alice).get(f"/memories/?{query}")
    html = response.content.decode()
    assert response.status_code == 200
    if shown != "nothing-shown":
        assert shown in html
    else:
        assert "No memories match these filters." in html
    assert hidden not in html


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("min_confidence=2", "Min confidence"),
        ("min_confidence=abc", "Enter a number"),
        ("kind=bogus", "Select a valid choice"),
        ("sort=password", "Sort"),
        ("project=nope", "Project"),
        ("min_confidence=0.9&max_confidence=0.1", "at least the min confidence"),
        ("q=%00", "Null characters are not allowed"),
    ],
)
def test_an_invalid_filter_is_a_400_with_a_visible_message(client, cast, agent, query, message):
    record(agent)
    login(client, cast.alice)
    page = client.get(f"/memories/?{query}")
    assert page.status_code == 400 and "<html" in page.content.decode()
    assert message in page.content.decode() and 'role="alert"' in page.content.decode()
    partial = client.get(f"/memories/?{query}", **HX)
    assert partial.status_code == 400 and "<html" not in partial.content.decode()
    assert message in partial.content.decode()


def test_the_list_is_paginated_25_per_page_with_links_that_keep_the_filters(client, cast, agent):
    for i in range(27):
        record(agent, title=f"Strategy number {i:02d}")
    login(client, cast.alice)
    first = client.get("/memories/?sort=title").content.decode()
    assert first.count('class="memcell"') == 25 and "Page 1 of 2" in first
    assert "?sort=title&amp;page=2" in first
    second = client.get("/memories/?sort=title&page=2", **HX).content.decode()
    assert second.count('class="memcell"') == 2 and "Strategy number 26" in second
    assert client.get("/memories/?page=99").status_code == 200  # out of range → last page


@pytest.mark.cross_tenant("memory-list")
def test_another_orgs_memories_are_not_listed(client, cast, agent):
    memory = record(agent)
    html = login(client, cast.charlie).get("/memories/").content.decode()
    assert memory.title not in html and "No memories match" in html


# --- the detail page ----------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_detail_page_shows_fields_history_signals_and_audit_trail(client, cast, agent, who):
    memory = record(agent, tags=["testing", "ci"])
    memory_feedback(principal=agent, memory=memory, helpful=True, comment="saved my day")
    response = login(client, getattr(cast, who)).get(f"/memories/{memory.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    for text in (memory.title, memory.description, memory.content, "Procedural", "web-app", "saved my day"):
        assert text in html
    assert html.count('class="dot') == 2  # the initial confidence + one signal
    points = html.split('<polyline points="')[1].split('"')[0].split()
    assert len(points) == 3  # … and the line runs on to today
    assert "memory.record" in html and "Explicit +" in html


def test_the_detail_page_shows_how_often_a_memory_was_shown_beside_its_uses(client, cast, agent):
    memory = record(agent)
    Memory.objects.filter(pk=memory.pk).update(
        impression_count=12, impressions_unused=7, last_shown_at=timezone.now(), usage_count=3
    )
    html = login(client, cast.bob).get(f"/memories/{memory.id}/").content.decode()
    assert "3 times" in html
    assert "12 times in agents' contexts unasked" in html and "(7 since its last use)" in html


def test_the_detail_page_shows_when_a_memory_changed_tier(client, cast, agent):
    memory = record(agent)
    AuditEvent.objects.create(
        organization=cast.org_a,
        actor="system",
        verb="memory.tier",
        target_type="memory",
        target_id=memory.id,
        data={"from": "hot", "to": "warm", "run": "run_1"},
    )
    html = login(client, cast.alice).get(f"/memories/{memory.id}/").content.decode()
    assert "memory.tier" in html and "hot → warm" in html


def test_the_detail_page_shows_lineage_both_ways_with_archive_reasons(client, cast, agent):
    merged = record(agent, title="Merged strategy")
    source = record(agent, title="Source strategy")
    Memory.objects.filter(pk=merged.pk).update(origin="consolidated")
    Memory.objects.filter(pk=source.pk).update(
        state="archived", archived_reason="consolidated", tier="archived", consolidated_into=merged
    )
    MemoryLinkFactory(source=merged, target=source, kind="consolidates")
    login(client, cast.alice)
    merged_html = client.get(f"/memories/{merged.id}/").content.decode()
    assert "Merged sources" in merged_html and "Source strategy" in merged_html and "(consolidated)" in merged_html
    assert "Un-merge" in merged_html
    source_html = client.get(f"/memories/{source.id}/").content.decode()
    assert "Consolidated into" in source_html and "Merged strategy" in source_html
    assert f'merged into <a href="/memories/{merged.id}/"' in source_html


@pytest.mark.cross_tenant("memory-detail", "memory-edit", "memory-archive", "memory-restore", "memory-unmerge")
def test_another_orgs_memory_is_a_404_everywhere(client, cast, agent):
    memory = record(agent)
    login(client, cast.charlie)
    assert client.get(f"/memories/{memory.id}/").status_code == 404
    assert client.get(f"/memories/{memory.id}/edit/").status_code == 404
    for action in ("archive", "restore", "unmerge"):
        assert client.post(f"/memories/{memory.id}/{action}/").status_code == 404
    assert client.post(f"/memories/{memory.id}/edit/", {"title": "x"}).status_code == 404
    memory.refresh_from_db()
    assert memory.state == "active" and memory.title == "Pin flaky test seeds"


def test_a_missing_memory_is_a_404(client, cast):
    assert login(client, cast.alice).get("/memories/mem_doesnotexist/").status_code == 404


@pytest.mark.parametrize("path", ["/memories/", "/memories/mem_x/", "/memories/mem_x/edit/"])
def test_anonymous_visitors_are_sent_to_the_login_page(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# --- writes -----------------------------------------------------------------------------------------------


def test_a_viewer_sees_no_write_buttons(client, cast, agent):
    memory = record(agent)
    html = login(client, cast.bob).get(f"/memories/{memory.id}/").content.decode()
    assert "Archive</button>" not in html and "/edit/" not in html


def test_a_viewer_cannot_archive_restore_edit_or_unmerge(client, cast, agent):
    memory = record(agent)
    login(client, cast.bob)
    assert client.post(f"/memories/{memory.id}/archive/").status_code == 403
    assert client.post(f"/memories/{memory.id}/archive/", **HX).status_code == 403
    assert client.post(f"/memories/{memory.id}/restore/").status_code == 403
    assert client.post(f"/memories/{memory.id}/unmerge/").status_code == 403
    assert client.get(f"/memories/{memory.id}/edit/").status_code == 403
    edit = {"title": "Hacked", "description": "d", "content": "c", "outcome": "success", "kind": "procedural"}
    assert client.post(f"/memories/{memory.id}/edit/", edit).status_code == 403
    memory.refresh_from_db()
    assert memory.state == "active" and memory.title == "Pin flaky test seeds"
    assert not AuditEvent.objects.filter(verb__startswith="memory.").exclude(verb="memory.record").exists()


def test_write_endpoints_accept_only_post(client, cast, agent):
    memory = record(agent)
    assert login(client, cast.alice).get(f"/memories/{memory.id}/archive/").status_code == 405


def test_an_owner_archives_and_restores_with_redirects_and_flash_messages(client, cast, agent):
    memory = record(agent)
    login(client, cast.alice)
    response = client.post(f"/memories/{memory.id}/archive/", {"reason": "stale"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/memories/{memory.id}/"
    assert "Archived." in response.content.decode()
    memory.refresh_from_db()
    assert (memory.state, memory.archived_reason, memory.tier) == ("archived", "stale", "archived")
    event = AuditEvent.objects.get(verb="memory.archive")
    assert event.target_id == memory.id and event.actor == "user:alice@acme.test" and event.data == {"reason": "stale"}
    response = client.post(f"/memories/{memory.id}/restore/", follow=True)
    assert "Restored" in response.content.decode()
    memory.refresh_from_db()
    assert memory.state == "active"
    assert AuditEvent.objects.filter(verb="memory.restore", target_id=memory.id).count() == 1


def test_archive_over_htmx_returns_the_updated_status_partial(client, cast, agent):
    memory = record(agent)
    login(client, cast.alice)
    response = client.post(f"/memories/{memory.id}/archive/", **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert 'id="memory-status"' in html and "Archived" in html and "Restore</button>" in html
    response = client.post(f"/memories/{memory.id}/restore/", **HX)
    assert "Archive</button>" in response.content.decode()


def test_an_invalid_archive_reason_is_a_400_message_not_a_500(client, cast, agent):
    memory = record(agent)
    login(client, cast.alice)
    response = client.post(f"/memories/{memory.id}/archive/", {"reason": "because"}, **HX)
    assert response.status_code == 400 and "reason must be one of" in response.content.decode()
    flash = client.post(f"/memories/{memory.id}/archive/", {"reason": "because"}, follow=True)
    assert "reason must be one of" in flash.content.decode()
    memory.refresh_from_db()
    assert memory.state == "active"


def test_an_owner_edits_a_memory_and_the_change_is_audited(client, cast, agent):
    memory = record(agent)
    login(client, cast.alice)
    form = client.get(f"/memories/{memory.id}/edit/")
    assert form.status_code == 200 and 'value="Pin flaky test seeds"' in form.content.decode()
    data = {
        "title": "Pin flaky test seeds everywhere",
        "description": memory.description,
        "content": memory.content,
        "outcome": "mixed",
        "kind": "procedural",
        "tags": "Testing, flaky ,",
    }
    response = client.post(f"/memories/{memory.id}/edit/", data, follow=True)
    assert response.redirect_chain[-1][0] == f"/memories/{memory.id}/"
    memory.refresh_from_db()
    assert memory.title == "Pin flaky test seeds everywhere" and memory.outcome == "mixed"
    assert memory.tags == ["testing", "flaky"]
    event = AuditEvent.objects.get(verb="memory.update")
    assert event.data["fields"] == ["outcome", "tags", "title"]


def test_an_invalid_edit_re_renders_the_form_with_a_400(client, cast, agent):
    memory = record(agent)
    data = {"title": "", "description": "d", "content": "c", "outcome": "great", "kind": "procedural"}
    response = login(client, cast.alice).post(f"/memories/{memory.id}/edit/", data)
    html = response.content.decode()
    assert response.status_code == 400 and "This field is required." in html and "Select a valid choice" in html
    memory.refresh_from_db()
    assert memory.title == "Pin flaky test seeds"


def test_a_service_error_on_edit_is_shown_as_a_form_error(client, cast, agent):
    memory = record(agent)
    data = {"title": "t", "description": "d", "content": "c", "outcome": "success", "kind": "procedural"}
    data["tags"] = ", ".join(f"tag{i}" for i in range(25))
    response = login(client, cast.alice).post(f"/memories/{memory.id}/edit/", data)
    assert response.status_code == 400 and "at most 20 tags" in response.content.decode()


def test_unmerge_brings_the_sources_back_and_archives_the_merged_memory(client, cast, agent):
    merged = record(agent, title="Merged strategy")
    source = record(agent, title="Source strategy")
    Memory.objects.filter(pk=merged.pk).update(origin="consolidated")
    Memory.objects.filter(pk=source.pk).update(
        state="archived", archived_reason="consolidated", tier="archived", consolidated_into=merged
    )
    response = login(client, cast.alice).post(f"/memories/{merged.id}/unmerge/", follow=True)
    assert "1 source memories are active again" in response.content.decode()
    merged.refresh_from_db()
    source.refresh_from_db()
    assert merged.state == "archived" and source.state == "active" and source.consolidated_into is None
    assert AuditEvent.objects.filter(verb="memory.unmerge", target_id=merged.id).exists()
    # the restored source's audit trail names the un-merge
    assert "memory.unmerge" in client.get(f"/memories/{source.id}/").content.decode()


def test_unmerging_a_memory_that_was_never_merged_is_a_flash_error(client, cast, agent):
    memory = record(agent)
    response = login(client, cast.alice).post(f"/memories/{memory.id}/unmerge/", follow=True)
    assert response.status_code == 200 and "only consolidated memories can be un-merged" in response.content.decode()


def test_the_list_shows_archived_memories_with_their_reason(client, cast, agent):
    memory = record(agent)
    Memory.objects.filter(pk=memory.pk).update(
        state="archived", archived_reason="superseded", tier="archived", archived_at=timezone.now()
    )
    html = login(client, cast.alice).get("/memories/?state=archived").content.decode()
    assert memory.title in html and "(superseded)" in html


def test_a_pruned_memory_shows_low_confidence_why_and_the_restore_button(client, cast, agent, settings):
    from memories.models import MemorySignalAggregate
    from memories.moderation.services import memories_prune_low_confidence

    settings.CONFIDENCE_PRUNE_THRESHOLD, settings.CONFIDENCE_PRUNE_MIN_SIGNALS = 0.3, 8
    memory = record(agent)
    MemorySignalAggregate.objects.create(memory=memory, organization_id=memory.organization_id, explicit_neg=9)
    Memory.objects.filter(pk=memory.pk).update(confidence=0.2)
    assert memories_prune_low_confidence()["pruned"] == 1

    html = login(client, cast.alice).get(f"/memories/{memory.id}/").content.decode()
    assert "(low confidence)" in html and "Restore</button>" in html
    assert "low_confidence" in html and "below the prune threshold 0.3 after 9 signals" in html
    response = client.post(f"/memories/{memory.id}/restore/", **HX)
    assert "Archive</button>" in response.content.decode()
    memory.refresh_from_db()
    assert (memory.state, memory.archived_reason) == ("active", "")


def test_the_detail_page_shows_the_consolidated_summary_of_a_memory(client, cast, agent):
    source = record(agent, title="Old advice: 30 s timeouts")
    summary = summary_make(
        agent,
        sources=[source],
        superseded_facts=(
            {"original_fact": "30 s timeouts", "superseded_by": "5 s timeouts", "source_memory_id": source.id},
        ),
    )
    html = login(client, cast.bob).get(f"/memories/{summary.memory_id}/").content.decode()
    assert "Consolidated summary" in html and summary.summary in html
    assert "Every database call gets a deadline" in html  # key fact
    assert "Use context.WithTimeout" in html and "bounded latency" in html  # decision and rationale
    assert "<s>30 s timeouts</s> → 5 s timeouts" in html
    assert f'href="/memories/{source.id}/"' in html


def test_the_detail_page_shows_why_a_summary_was_rejected(client, cast, agent):
    memory = record(agent)
    summary_store(
        memory=memory,
        sources=[memory],
        run_id="run_x",
        error="summary reply contains no JSON object",
        raw_reply="Sure! Here you go.",
    )
    html = login(client, cast.alice).get(f"/memories/{memory.id}/").content.decode()
    assert "could not be used: summary reply contains no JSON object" in html and "Sure! Here you go." in html


def test_a_memory_without_a_summary_shows_no_summary_card(client, cast, agent):
    memory = record(agent)
    assert "Consolidated summary" not in login(client, cast.alice).get(f"/memories/{memory.id}/").content.decode()
