"""Dashboard: the overview page and the aggregate selectors behind it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.audit import audit_record
from accounts.tokens.services import token_create
from memories.dashboard.selectors import confidence_histogram, memories_per_week, memory_counts, recent_activity
from memories.models import Memory
from memories.moderation.services import memory_archive
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
    assert [(b.title, b.count) for b in counts["state"]] == [
        ("active", 1), ("archived", 0), ("proposed", 0), ("quarantined", 0)
    ]
    assert {b.title: b.count for b in counts["kind"]}["procedural"] == 1
    assert memory_counts(cast.principal(cast.charlie))["state"][0].count == 0


def test_recent_activity_keeps_the_last_twenty_events_of_the_org(cast, agent):
    for i in range(22):
        record(agent, title=f"m{i}")
    events = list(recent_activity(cast.principal(cast.alice)))
    assert len(events) == 20 and events[0].data["title"] == "m21"
    assert list(recent_activity(cast.principal(cast.charlie))) == []


def _about_column(html: str) -> list[str]:
    """The text of the activity table's last column, row by row (tags stripped)."""
    import re

    rows = re.findall(r"<tr>(.*?)</tr>", html.split("Recent activity", 1)[1], flags=re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S) for row in rows]
    return [re.sub(r"<[^>]+>", "", row[-1]).strip() for row in cells if len(row) == 4]


def test_recent_activity_names_what_each_event_was_about_and_links_it(client, cast, agent):
    memory = record(agent, title="Pin flaky test seeds")
    memory_archive(principal=cast.principal(cast.alice), memory=memory, reason="stale")  # its event has no title
    token_create(organization=cast.org_a, label="deploy bot")
    audit_record(organization=cast.org_a, actor=cast.principal(cast.alice), verb="organization.plan", target=cast.org_a)
    client.force_login(cast.bob)
    html = client.get("/").content.decode()
    about = _about_column(html)
    # "test" is the agent fixture's token
    assert about == ["Acme", "deploy bot", "Pin flaky test seeds", "Pin flaky test seeds", "test"]
    assert f'<a href="/memories/{memory.id}/">Pin flaky test seeds</a>' in html
    assert '<a href="/settings/tokens/">deploy bot</a>' in html
    assert "organization " + str(cast.org_a.pk) not in html and "apitoken" not in html
    assert "<td>alice@acme.test</td>" in html and "user:alice" not in html  # who: the person, not the actor key


@pytest.mark.cross_tenant("dashboard-overview")
def test_an_event_pointing_at_another_orgs_object_shows_only_its_kind(client, cast, agent, make_token):
    _, globex = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(globex, title="Globex pricing secrets")
    # an event of acme that names globex's memory and project (no service writes one; the page must not care)
    audit_record(organization=cast.org_a, actor=agent, verb="memory.archive", target=theirs)
    audit_record(organization=cast.org_a, actor=agent, verb="project.update", target=cast.project_b)
    client.force_login(cast.alice)
    html = client.get("/").content.decode()
    assert _about_column(html)[:2] == ["a project", "a memory"]
    assert "Globex pricing secrets" not in html and theirs.id not in html and "Billing" not in html
