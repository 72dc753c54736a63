"""Reads for the service's own health (``/readyz``, ``/metrics``' gauges, the dashboard banner);
verdicts in ``health.py``.

Nothing here is tenant data: counts and ages across the whole service, never a row's content.
Both readers are cached for a few seconds in the process cache, so a dashboard page or a load
balancer's probe costs at most a query or two now and then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TypeVar

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, Min, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from reasoningbank.health import (
    Backlog,
    QueueHealth,
    RunningHealth,
    WorkerHealth,
    WorkerPresence,
    backlog,
    queue_health,
    running_health,
    worker_health,
    worker_presence,
)
from reasoningbank.work_heartbeat import database_now, worker_is_gone

CACHE_SECONDS = 10
_WORKER_KEY, _QUEUE_KEY, _RUNNING_KEY = "rb:health:worker", "rb:health:queue", "rb:health:running"
_WEBHOOK_WORKER_KEY = "rb:health:webhook-worker"


def process_booted_at() -> datetime:
    """When this process loaded the apps (``ReasoningBankConfig.ready``): the start of the grace."""
    return apps.get_app_config("reasoningbank").booted_at  # type: ignore[attr-defined,no-any-return]


def worker_health_get(*, now: datetime | None = None) -> WorkerHealth:
    from django_q.conf import Conf
    from django_q.models import Schedule

    from reasoningbank.models import WorkerHeartbeat
    from reasoningbank.schedules import QUEUE_PROBE_SCHEDULE
    from reasoningbank.services import cluster_name

    now = now or timezone.now()
    beat_at = WorkerHeartbeat.objects.filter(cluster=cluster_name()).values_list("beat_at", flat=True).first()
    health = worker_health(
        now=now,
        beat_at=beat_at,
        booted_at=process_booted_at(),
        stale_after=float(settings.WORKER_HEARTBEAT_STALE_AFTER),
        grace=float(settings.WORKER_STARTUP_GRACE),
        inline=bool(Conf.SYNC),
    )
    if health.down and not Schedule.objects.filter(name=QUEUE_PROBE_SCHEDULE).exists():
        health = replace(health, scheduled=False)  # starting a worker alone would not bring a beat
    return health


def webhook_worker_health_get(*, now: datetime | None = None) -> WorkerHealth:
    """The webhook worker (the qcluster on WEBHOOKS_CLUSTER's queue) from its processes' own heartbeats
    (reasoningbank/worker_presence.py): alive while any of them beat lately. A restarted one is "ok" at once
    (the dead one's last beat is still fresh) and "starting" for the grace after web's own start."""
    from django_q.conf import Conf

    from reasoningbank.models import WorkerHeartbeat
    from reasoningbank.services import WORKER_PRESENCE_SEPARATOR

    now = now or timezone.now()
    rows = WorkerHeartbeat.objects.filter(cluster__startswith=f"{settings.WEBHOOKS_CLUSTER}{WORKER_PRESENCE_SEPARATOR}")
    return worker_health(
        now=now,
        beat_at=rows.aggregate(newest=Max("beat_at"))["newest"],
        booted_at=process_booted_at(),
        stale_after=float(settings.WORKER_HEARTBEAT_STALE_AFTER),
        grace=float(settings.WORKER_STARTUP_GRACE),
        inline=bool(Conf.SYNC),
    )


def worker_presences_get(*, now: datetime | None = None) -> list[WorkerPresence]:
    """Every worker seen lately, each by its own heartbeat (reasoningbank/worker_presence.py), by host and pid."""
    from reasoningbank.models import WorkerHeartbeat
    from reasoningbank.services import WORKER_PRESENCE_SEPARATOR, cluster_name

    now = now or timezone.now()
    rows = WorkerHeartbeat.objects.filter(cluster__startswith=f"{cluster_name()}{WORKER_PRESENCE_SEPARATOR}")
    stale_after = float(settings.WORKER_HEARTBEAT_STALE_AFTER)
    return [
        worker_presence(now=now, beat_at=row.beat_at, host=row.host, pid=row.pid, stale_after=stale_after)
        for row in rows.order_by("host", "pid")
    ]


def queue_health_get(*, now: datetime | None = None) -> QueueHealth:
    from consolidation.models import ConsolidationRun
    from memories.models import AgentSession

    now = now or timezone.now()
    tasks: Backlog | None = None
    webhook_tasks: Backlog | None = None
    from django_q.conf import Conf

    orm_alias = Conf.ORM
    if orm_alias:
        from django_q.models import OrmQ

        from reasoningbank.services import cluster_name

        # waiting = not locked by a pusher (a pulled task's lock is in the future until it is acked)
        waiting = OrmQ.objects.using(orm_alias).filter(lock__lte=now)
        row = waiting.filter(key=cluster_name()).aggregate(n=Count("id"), oldest=Min("lock"))
        tasks = backlog(now=now, count=row["n"], oldest=row["oldest"])
        # the webhook worker's queue: its tasks end within WEBHOOK_TIMEOUT, or at once when their
        # organization's deliveries are all in flight, so only a webhook worker that is gone lets it age
        row = waiting.filter(key=settings.WEBHOOKS_CLUSTER).aggregate(n=Count("id"), oldest=Min("lock"))
        webhook_tasks = backlog(now=now, count=row["n"], oldest=row["oldest"])
    runs = ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_QUEUED).aggregate(
        n=Count("id"), oldest=Min("created_at")
    )
    # a session queued again after a transient LLM failure waits out its backoff on purpose: it is
    # due (and counted) from next_attempt_at on
    sessions = (
        AgentSession.objects.filter(status=AgentSession.STATUS_QUEUED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .aggregate(n=Count("id"), oldest=Min(Coalesce("next_attempt_at", "updated_at")))
    )
    return queue_health(
        tasks=tasks,
        runs=backlog(now=now, count=runs["n"], oldest=runs["oldest"]),
        sessions=backlog(now=now, count=sessions["n"], oldest=sessions["oldest"]),
        stalled_after=float(settings.QUEUE_STALLED_AFTER),
        webhook_tasks=webhook_tasks,
    )


def running_health_get(*, now: datetime | None = None) -> RunningHealth:
    """Runs and sessions still "running" whose worker is not alive: a heartbeat older than
    WORK_HEARTBEAT_STALE_AFTER, or a worker process of this host that is gone."""
    from consolidation.models import ConsolidationRun
    from memories.models import AgentSession

    now = now or database_now()  # beats are stamped by the database's clock
    stale_after = float(settings.WORK_HEARTBEAT_STALE_AFTER)
    cutoff = now - timedelta(seconds=stale_after)
    counts = []
    for rows, started in (
        (ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_RUNNING), "created_at"),
        (AgentSession.objects.filter(status=AgentSession.STATUS_RUNNING), "started_at"),
    ):
        stale = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, **{f"{started}__lt": cutoff})
        # few rows run at once: each one's worker is looked at (the stale ones need no look)
        fresh = rows.exclude(stale).exclude(worker="").values_list("worker", flat=True)
        counts.append(rows.filter(stale).count() + sum(1 for worker in fresh if worker_is_gone(worker)))
    return running_health(runs=counts[0], sessions=counts[1], stale_after=stale_after)


T = TypeVar("T")


def _cached(key: str, kind: type[T], read: Callable[[], T], seconds: float) -> T:
    """``read()``, shared by the processes through the cache for ``seconds``: these pages and probes are
    polled, the reads behind them are aggregates over whole tables."""
    hit = cache.get(key)
    if isinstance(hit, kind):
        return hit
    value = read()
    cache.set(key, value, seconds)
    return value


def worker_health_cached() -> WorkerHealth:
    return _cached(_WORKER_KEY, WorkerHealth, worker_health_get, CACHE_SECONDS)


def webhook_worker_health_cached() -> WorkerHealth:
    return _cached(_WEBHOOK_WORKER_KEY, WorkerHealth, webhook_worker_health_get, CACHE_SECONDS)


def queue_health_cached() -> QueueHealth:
    return _cached(_QUEUE_KEY, QueueHealth, queue_health_get, CACHE_SECONDS)


def running_health_cached() -> RunningHealth:
    return _cached(_RUNNING_KEY, RunningHealth, running_health_get, CACHE_SECONDS)


def health_cache_clear() -> None:
    cache.delete_many(
        [_WORKER_KEY, _WEBHOOK_WORKER_KEY, _QUEUE_KEY, _RUNNING_KEY, _TIERS_KEY, _WAITING_KEY, _MIGRATIONS_KEY]
    )


# --- state for /metrics' gauges, /readyz and the system page (all orgs: operator views) ---------------------

TIERS = ("hot", "warm", "cold", "archived")
# below this many memories (PostgreSQL's estimate, free) the tiers are counted exactly; above, a count
# would scan the whole table on every scrape, so a fixed sample of the table's pages is counted and
# scaled (REPEATABLE: the same pages each time, so the gauge does not jitter while nothing changes)
TIER_COUNT_EXACT_BELOW = 50_000
TIER_SAMPLE_PERCENT = 1.0
_TIERS_KEY, _WAITING_KEY, _MIGRATIONS_KEY = "rb:state:tiers", "rb:state:waiting", "rb:state:migrations"
MIGRATIONS_CACHE_SECONDS = 30


def memories_by_tier_get(
    *, exact_below: int = TIER_COUNT_EXACT_BELOW, sample_percent: float = TIER_SAMPLE_PERCENT
) -> dict[str, int]:
    """Memories per tier (archived ones under "archived"), every tier present (0 when empty); promotion
    proposals awaiting review are no memories yet and are left out."""
    from memories.models import Memory

    table = Memory._meta.db_table
    counts = dict.fromkeys(TIERS, 0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
        row = cursor.fetchone()
        estimate = float(row[0]) if row else -1.0  # -1: never analysed
        if estimate >= exact_below:
            cursor.execute(
                f"SELECT tier, count(*) FROM {connection.ops.quote_name(table)} "
                "TABLESAMPLE SYSTEM (%s) REPEATABLE (0) WHERE state <> %s GROUP BY tier",
                [sample_percent, Memory.STATE_PROPOSED],
            )
            for tier, n in cursor.fetchall():
                if tier in counts:
                    counts[tier] = round(n * 100 / sample_percent)
            return counts
    memories = Memory.objects.exclude(state=Memory.STATE_PROPOSED)
    for tier, n in memories.values_list("tier").annotate(n=Count("id")).order_by():
        counts[tier] = n
    return counts


def waiting_for_llm_get() -> dict[str, int]:
    """Work kept until an LLM is configured (or an org's budget resets): sessions and consolidation runs."""
    from consolidation.models import ConsolidationRun
    from memories.models import AgentSession

    return {
        "sessions": AgentSession.objects.filter(
            status__in=[AgentSession.STATUS_WAITING, AgentSession.STATUS_WAITING_BUDGET]
        ).count(),
        "consolidation_runs": ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_WAITING).count(),
    }


def memories_by_tier_cached() -> dict[str, int]:
    return _cached(_TIERS_KEY, dict, memories_by_tier_get, CACHE_SECONDS)


def waiting_for_llm_cached() -> dict[str, int]:
    return _cached(_WAITING_KEY, dict, waiting_for_llm_get, CACHE_SECONDS)


def migrations_unapplied_get() -> list[str]:
    """``app.migration`` names this code has and the database has not applied, in order."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, backwards in plan if not backwards]


def migrations_unapplied_cached() -> list[str]:
    """Cached briefly: loading the migration graph reads every migration module and a table."""
    return _cached(_MIGRATIONS_KEY, list, migrations_unapplied_get, MIGRATIONS_CACHE_SECONDS)
