"""The order of a project's session-start memories, kept a minute per web process
(docs/session-context.md#reuse): what was written or left since is seen at once, only the order among
older memories waits."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memories.models import Memory
from tests.factories import MemoryFactory

CONTEXT = "/api/v1/memories/context"


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def shown(client: Any, **body: Any) -> list[str]:
    response = client.post(CONTEXT, {"project": "web-app", **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["memory_ids"]


TOPICS = [
    "flaky integration tests",
    "slow database migrations",
    "leaking file handles",
    "webhook retries",
    "cache stampedes",
    "expired TLS certificates",
    "timezone bugs",
    "memory growth in workers",
    "deadlocks between writers",
    "oversized log lines",
    "broken CSV imports",
    "race conditions at start-up",
    "stale feature flags",
]


def memory(agent: Any, n: int, confidence: float) -> str:
    topic = TOPICS[n % len(TOPICS)]
    made = MemoryFactory(
        principal=agent, title=f"Handle {topic}", description=f"When {topic} come back",
        content=f"Against {topic}: reproduce it alone first, then fix the cause named in the logs ({n}).",
    )  # fmt: skip
    Memory.objects.filter(pk=made.pk).update(confidence=confidence)
    return made.id


@pytest.fixture
def ranked(agent):
    """Twelve procedural memories written an hour ago, best first: older than any kept order, so a
    session start within the reuse time reads them only through the order kept."""
    ids = [memory(agent, n, 0.98 - n * 0.02) for n in range(12)]
    Memory.objects.filter(pk__in=ids).update(created_at=timezone.now() - timedelta(hours=1))
    return ids


def test_a_memory_recorded_after_a_session_start_is_in_the_next_one_at_its_place(alice, agent, ranked):
    assert shown(alice, max=3) == ranked[:3]
    newest = memory(agent, 12, 0.99)
    assert shown(alice, max=3) == [newest, *ranked[:2]]


@pytest.mark.parametrize(
    "change", [{"state": "archived", "archived_reason": "manual"}, {"state": "quarantined"}, {"trust": "pending"}]
)
def test_a_memory_that_left_after_a_session_start_never_reaches_the_next_one(alice, ranked, change):
    assert shown(alice, max=3) == ranked[:3]
    Memory.objects.filter(pk=ranked[0]).update(**change)
    assert shown(alice, max=3) == ranked[1:4]


def test_a_memory_fallen_below_the_floor_leaves_and_the_next_takes_its_place(alice, ranked):
    assert shown(alice, max=3) == ranked[:3]
    Memory.objects.filter(pk=ranked[1]).update(confidence=0.6)
    assert shown(alice, max=3) == [ranked[0], *ranked[2:4]]


def test_when_too_few_of_the_kept_order_remain_the_whole_order_is_taken_again(alice, ranked):
    assert shown(alice, max=2) == ranked[:2]  # the order kept runs eight deep
    Memory.objects.filter(pk__in=ranked[:8]).update(state="archived", archived_reason="manual")
    assert shown(alice, max=2) == ranked[8:10]


def test_an_older_memory_that_rose_waits_for_the_order_to_expire_unless_reuse_is_off(alice, ranked, settings):
    assert shown(alice, max=2) == ranked[:2]  # the order kept: the first eight
    Memory.objects.filter(pk=ranked[11]).update(confidence=0.995)
    assert shown(alice, max=2) == ranked[:2]  # ranked[11] was below the order kept, and is not new
    settings.CONTEXT_RANKING_REUSE_SECONDS = 0
    assert shown(alice, max=2) == [ranked[11], ranked[0]]
