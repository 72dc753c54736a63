"""The gauges of ``/metrics`` that are state, read from the database when Prometheus scrapes.

Queue depth and oldest waiting age, memories per tier, work waiting for an LLM and the worker's
heartbeat age live in PostgreSQL, the one place every process agrees on; reading them at scrape time
(a few aggregate queries over all orgs, cached for ``selectors.CACHE_SECONDS`` like ``/readyz``)
means no process keeps a copy that could go stale. Labels are bounded (queue, tier, work): no tenant
appears. If the database cannot be read, ``reasoningbank_state_up`` is 0 and the counters are still
served.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import DatabaseError
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from reasoningbank.health import Backlog
from system.selectors import (
    memories_by_tier_cached,
    queue_health_cached,
    waiting_for_llm_cached,
    worker_health_cached,
)

logger = logging.getLogger(__name__)
PREFIX = "reasoningbank"
WORKER_ALIVE = ("ok", "starting", "inline")


class DatabaseStateCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            families = list(self._families())
        except DatabaseError as exc:  # e.g. migrations not applied yet: the counters are still worth serving
            logger.warning("/metrics could not read the service state: %s", type(exc).__name__)
            families = []
        up = GaugeMetricFamily(f"{PREFIX}_state_up", "1 when the state gauges below could be read from the database")
        up.add_metric([], 1 if families else 0)
        yield up
        yield from families

    def _families(self) -> Iterator[GaugeMetricFamily]:
        queue = queue_health_cached()
        depth = GaugeMetricFamily(
            f"{PREFIX}_queue_depth",
            "Work waiting: broker tasks (ORM broker only), queued consolidation runs, due queued sessions",
            labels=["queue"],
        )
        age = GaugeMetricFamily(
            f"{PREFIX}_queue_oldest_age_seconds",
            "How long the oldest waiting item has waited (0 when none)",
            labels=["queue"],
        )
        backlogs: dict[str, Backlog | None] = {
            "tasks": queue.tasks,
            "consolidation_runs": queue.runs,
            "sessions": queue.sessions,
        }
        for name, backlog in backlogs.items():
            if backlog is None:  # another broker (Redis): not measured here
                continue
            depth.add_metric([name], backlog.count)
            age.add_metric([name], backlog.oldest_age or 0.0)
        stalled_after = GaugeMetricFamily(
            f"{PREFIX}_queue_stalled_after_seconds", "QUEUE_STALLED_AFTER: /readyz fails past this age"
        )
        stalled_after.add_metric([], queue.stalled_after)
        yield from (depth, age, stalled_after)

        worker = worker_health_cached()
        up = GaugeMetricFamily(
            f"{PREFIX}_worker_up", "1 while the worker's heartbeat is fresh (or it is starting, or tasks run inline)"
        )
        up.add_metric([], 1 if worker.status in WORKER_ALIVE else 0)
        yield up
        if worker.last_probe_age is not None:  # never seen: no sample rather than a made-up age
            beat = GaugeMetricFamily(
                f"{PREFIX}_worker_heartbeat_age_seconds", "Seconds since the worker's last heartbeat task ran"
            )
            beat.add_metric([], worker.last_probe_age)
            yield beat

        tiers = GaugeMetricFamily(
            f"{PREFIX}_memories",
            "Memories per tier, all orgs (exact below 50,000 memories, a 1% sample of the table above)",
            labels=["tier"],
        )
        for tier, count in memories_by_tier_cached().items():
            tiers.add_metric([tier], count)
        yield tiers

        waiting = GaugeMetricFamily(
            f"{PREFIX}_waiting_for_llm",
            "Sessions and consolidation runs waiting for an LLM (none configured, or budget)",
            labels=["work"],
        )
        for work, count in waiting_for_llm_cached().items():
            waiting.add_metric([work], count)
        yield waiting
