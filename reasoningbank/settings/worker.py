"""Background work: the django-q2 cluster, and the stamps that tell a live worker and live work from
dead ones."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_duration, env_float, env_int, env_str
from reasoningbank.settings.consolidation import CONSOLIDATION_RUN_TIMEOUT
from reasoningbank.settings.webhooks import WEBHOOK_TIMEOUT, WEBHOOK_WORKERS, WEBHOOKS_CLUSTER

# --- Background work (django-q2, ORM broker by default) --------------------------------------
Q_CLUSTER = {
    "name": "reasoningbank",
    "workers": env_int("Q_WORKERS", 2, minimum=1),
    "timeout": int(CONSOLIDATION_RUN_TIMEOUT) + 60,
    "retry": int(CONSOLIDATION_RUN_TIMEOUT) + 120,
    "max_attempts": 1,  # our tasks own their retry policy (backoff, visible status)
    "queue_limit": 50,
    "bulk": 10,
    "orm": "default",
    "catch_up": False,
    "poll": env_float("Q_POLL_SECONDS", 0.1, minimum=0.05),  # the ORM broker is polled; 0.5 s cost ~10% throughput
    "ack_failures": True,
    # successes kept per task function: the per-minute queue probe cannot push the history of
    # distillations and consolidations out of the last save_limit (250) rows
    "save_limit_per": "func",
    "sync": env_bool("Q_SYNC", False),
    # The webhook worker: the same broker, its own queue and processes (Q_CLUSTER_NAME=WEBHOOKS_CLUSTER,
    # started by scripts/run.sh beside the worker). A delivery attempt ends by WEBHOOK_TIMEOUT; its task
    # limit is a backstop well under the main worker's, which is sized for a consolidation run.
    "ALT_CLUSTERS": {
        WEBHOOKS_CLUSTER: {
            "workers": WEBHOOK_WORKERS,
            "timeout": int(WEBHOOK_TIMEOUT) + 60,
            "retry": int(WEBHOOK_TIMEOUT) + 120,
        }
    },
}
if env_str("REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = env_str("REDIS_URL")

# Each organization's share of the worker (reasoningbank/fair_share.py): at most this many slow tasks (a
# session's distillation, a consolidation run) of one organization run at once while another organization
# has such work waiting; alone, an organization may use every slot. docs/security/worker-fairness.md
WORKER_ORG_CONCURRENCY = env_int("WORKER_ORG_CONCURRENCY", 1, minimum=1, maximum=256)

# /readyz and the dashboard banner (reasoningbank/health.py): the queue probe runs every minute
# (rb:queue-probe); a probe older than this means the worker is down. Right after a start a missing or
# stale beat reads "starting" for the grace period. Work waiting longer than QUEUE_STALLED_AFTER
# (a broker task, a queued run or session) marks the queue "stalled".
WORKER_HEARTBEAT_STALE_AFTER = env_duration("WORKER_HEARTBEAT_STALE_AFTER", "3m")
WORKER_STARTUP_GRACE = env_duration("WORKER_STARTUP_GRACE", "2m")
QUEUE_STALLED_AFTER = env_duration("QUEUE_STALLED_AFTER", "5m")
# A running consolidation run or session distillation stamps its heartbeat this often (a thread of the
# worker process executing it); one whose heartbeat is older than WORK_HEARTBEAT_STALE_AFTER lost its
# worker: /readyz reports it, and the sweep (every minute, at each worker start, and before a project's
# next run is queued) fails the run, releasing its project, or queues the session again.
# docs/operations.md
WORK_HEARTBEAT_INTERVAL = env_duration("WORK_HEARTBEAT_INTERVAL", "10s")
WORK_HEARTBEAT_STALE_AFTER = env_duration("WORK_HEARTBEAT_STALE_AFTER", "45s")
if WORK_HEARTBEAT_STALE_AFTER < 2 * WORK_HEARTBEAT_INTERVAL:
    raise ImproperlyConfigured(
        "WORK_HEARTBEAT_STALE_AFTER must be at least twice WORK_HEARTBEAT_INTERVAL (one late beat is not a death)"
    )
