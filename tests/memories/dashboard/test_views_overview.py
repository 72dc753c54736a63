"""Dashboard: the overview page and the aggregate selectors behind it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.dashboard.selectors import confidence_histogram, memories_per_week, memory_counts, recent_activity
from memories.models import Memory
from memories.sessions.services import session_submit
from tests.factories import MemoryLinkFactory, memory_recorder

record = memory_recorder(
    title="Pin flaky test seeds", description="When a test flakes", content="Seed the RNG in the test setup."
)


def test_an_org_without_memories_sees_an_empty_state_with_a_connect_an_agent_hint(client, cast):
    client.force_login(cast.alice)
    response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "No memories yet" in html and 'href="/settings/tokens/"' in html and "<svg" not in html


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_overview_shows_counts_charts_and_recent_activity(client, cast, agent, who):
    record(agent)
    record(agent, title="A semantic fact", kind="semantic", outcome="failure")
    client.force_login(getattr(cast, who))
    response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert 'aria-current="page">Overview' in html
    assert html.count("<svg") == 2 and "<rect" in html
    assert 'href="/memories/?kind=semantic">Semantic</a></dt><dd>1</dd>' in html
    assert 'href="/memories/?outcome=failure">Failure</a></dt><dd>1</dd>' in html
    assert "memory.record" in html  # recent activity
    assert "No memories yet" not in html


def test_the_overview_counts_sessions_by_status_and_open_disputes(client, cast, agent, settings):
    settings.LLM_PROVIDER = "none"
    a, b = record(agent, title="Use tabs"), record(agent, title="Use spaces")
    MemoryLinkFactory(source=a, target=b, kind="contradicts", weight=0.9)
    session_submit(principal=agent, session_id="run-1", outcome="success", trace="agent: did things")
    client.force_login(cast.alice)
    html = client.get("/").content.decode()
    assert 'href="/sessions/?status=waiting_for_llm">Waiting for LLM</a></dt><dd>1</dd>' in html
    assert "1 contradiction</a> waits for a moderator" in html


@pytest.mark.cross_tenant("dashboard-overview")
def test_the_overview_only_counts_the_users_own_org(client, cast, agent):
    record(agent)
    client.force_login(cast.charlie)
    html = client.get("/").content.decode()
    assert "No memories yet" in html and "memory.record" not in html


def test_anonymous_visitors_of_the_overview_are_sent_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/")


def test_a_user_without_an_org_is_told_so(client, cast):
    from tests.factories import UserFactory

    client.force_login(UserFactory(email="loner@example.com"))
    response = client.get("/")
    assert response.status_code == 403 and "not a member of any organization" in response.content.decode()


def test_the_confidence_histogram_puts_each_active_memory_in_its_bucket(cast, agent):
    ids = [record(agent, title=f"m{i}").id for i in range(4)]
    for memory_id, confidence in zip(ids, (0.0, 0.55, 1.0, 0.95), strict=True):
        Memory.objects.filter(pk=memory_id).update(confidence=confidence)
    archived = record(agent, title="archived")
    Memory.objects.filter(pk=archived.pk).update(state="archived", archived_reason="manual")
    buckets = confidence_histogram(cast.principal(cast.alice))
    assert [b.count for b in buckets] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert buckets[9].title == "0.9–1.0"


def test_memories_per_week_covers_twelve_weeks_oldest_first(cast, agent):
    now = timezone.now()
    record(agent, title="this week")
    old = record(agent, title="three weeks ago")
    Memory.objects.filter(pk=old.pk).update(created_at=now - timedelta(weeks=3))
    ancient = record(agent, title="a year ago")
    Memory.objects.filter(pk=ancient.pk).update(created_at=now - timedelta(weeks=52))
    weeks = memories_per_week(cast.principal(cast.alice), now=now)
    assert len(weeks) == 12 and sum(w.count for w in weeks) == 2
    assert weeks[-1].count == 1 and weeks[-4].count == 1


def test_memory_counts_list_every_choice_even_when_zero(cast, agent):
    record(agent)
    counts = memory_counts(cast.principal(cast.alice))
    assert [(b.title, b.count) for b in counts["state"]] == [("active", 1), ("archived", 0), ("proposed", 0)]
    assert {b.title: b.count for b in counts["kind"]}["procedural"] == 1
    assert memory_counts(cast.principal(cast.charlie))["state"][0].count == 0


def test_recent_activity_keeps_the_last_twenty_events_of_the_org(cast, agent):
    for i in range(22):
        record(agent, title=f"m{i}")
    events = list(recent_activity(cast.principal(cast.alice)))
    assert len(events) == 20 and events[0].data["title"] == "m21"
    assert list(recent_activity(cast.principal(cast.charlie))) == []
