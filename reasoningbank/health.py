"""Is the product able to do its background work? Pure verdicts for ``/readyz`` and the dashboard
banner, from timestamps the selectors read (no Django here, so every edge is unit-tested plainly).

* the worker (django-q2 ``qcluster``, a separate process) proves it is alive by running the
  queue probe (the ``rb:queue-probe`` task) every minute: the probe travels through the same broker queue, pusher
  and worker pool as real work, so a cluster whose pusher died (nothing pulled any more) goes stale
  too, not only one whose processes are gone;
* the queue is stalled when its oldest waiting item (a broker task, a queued consolidation run, a
  queued session) has waited longer than the threshold;
* running work is orphaned when a consolidation run or a session is "running" but its own heartbeat
  (stamped by the process executing it) went stale or that process is gone: a worker was killed;
* the LLM is reported, never fatal: without one, sessions and consolidations wait.

``/readyz`` answers a load balancer's question — may this web process get traffic? — from the
database and the migrations alone: a worker that is down or restarting does not stop web from
serving, and a probe that said so would take healthy webs out of rotation. The worker's parts are
reported in the same body, apart, and ``/readyz/worker`` answers 503 on them for whoever watches the
background work (docs/observability.md#health).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

WorkerStatus = Literal["ok", "starting", "stale", "never_seen", "inline"]
QueueStatus = Literal["ok", "stalled"]

WORKER_COMMAND = ".venv/bin/python manage.py qcluster"
SCHEDULES_COMMAND = ".venv/bin/python manage.py setup_schedules"


@dataclass(frozen=True)
class WorkerHealth:
    status: WorkerStatus
    last_probe_age: float | None  # seconds since the last queue probe ran; None when never seen
    stale_after: float
    scheduled: bool = True  # the probe's schedule exists (only looked up when the probe is missing)

    @property
    def down(self) -> bool:
        """Worth a banner: the worker is gone or never came (not while it may still be starting)."""
        return self.status in ("stale", "never_seen")


def worker_health(
    *,
    now: datetime,
    beat_at: datetime | None,
    booted_at: datetime,
    stale_after: float,
    grace: float,
    inline: bool = False,
    scheduled: bool = True,
) -> WorkerHealth:
    """The worker's state from its last heartbeat.

    ``booted_at`` is when this (web) process started: right after a start the worker has not ticked
    yet (django-q2 runs its scheduler about 30 s after it starts, and an old beat from before a
    restart is stale), so for ``grace`` seconds a missing or stale beat reads "starting", not dead.
    ``inline`` (``Q_SYNC``): tasks run inside the request, there is no worker to wait for.
    """
    age = (now - beat_at).total_seconds() if beat_at is not None else None
    if inline:
        return WorkerHealth("inline", age, stale_after)
    if age is not None and age <= stale_after:
        return WorkerHealth("ok", age, stale_after)
    if (now - booted_at).total_seconds() <= grace:
        return WorkerHealth("starting", age, stale_after)
    return WorkerHealth("never_seen" if age is None else "stale", age, stale_after, scheduled=scheduled)


@dataclass(frozen=True)
class WorkerPresence:
    """One worker (a ``qcluster`` on some machine) as its own presence stamp tells
    (reasoningbank/worker_presence.py)."""

    host: str
    pid: int | None
    age: float  # seconds since its last beat
    stale_after: float

    @property
    def alive(self) -> bool:
        return self.age <= self.stale_after


def worker_presence(
    *, now: datetime, beat_at: datetime, host: str, pid: int | None, stale_after: float
) -> WorkerPresence:
    return WorkerPresence(host, pid, max(0.0, (now - beat_at).total_seconds()), stale_after)


@dataclass(frozen=True)
class Backlog:
    """How many items wait in one place and since when (``oldest_age`` in seconds)."""

    count: int
    oldest_age: float | None


@dataclass(frozen=True)
class QueueHealth:
    status: QueueStatus
    tasks: Backlog | None  # django-q2's ORM broker queue (None with another broker: not measured here)
    runs: Backlog  # consolidation runs still "queued"
    sessions: Backlog  # sessions "queued" and due (not those waiting out a retry backoff)
    stalled_after: float
    webhook_tasks: Backlog | None = None  # the webhook worker's queue (ORM broker only, like ``tasks``)


def backlog(*, now: datetime, count: int, oldest: datetime | None) -> Backlog:
    # a clock step or a lock set in the future must not produce a negative age
    return Backlog(count, max(0.0, (now - oldest).total_seconds()) if oldest is not None and count else None)


def queue_health(
    *,
    tasks: Backlog | None,
    runs: Backlog,
    sessions: Backlog,
    stalled_after: float,
    webhook_tasks: Backlog | None = None,
) -> QueueHealth:
    backlogs = (tasks, runs, sessions, webhook_tasks)
    ages = [b.oldest_age for b in backlogs if b is not None and b.oldest_age is not None]
    status: QueueStatus = "stalled" if any(age > stalled_after for age in ages) else "ok"
    return QueueHealth(status, tasks, runs, sessions, stalled_after, webhook_tasks)


RunningStatus = Literal["ok", "orphaned"]


@dataclass(frozen=True)
class RunningHealth:
    """Work in progress without a live worker: consolidation runs and sessions still "running" whose
    heartbeat is older than ``stale_after`` or whose process is known dead. Until a sweep releases
    them (within a minute), a run blocks its project and a session waits: not ready."""

    status: RunningStatus
    runs: int
    sessions: int
    stale_after: float


def running_health(*, runs: int, sessions: int, stale_after: float) -> RunningHealth:
    return RunningHealth("orphaned" if runs or sessions else "ok", runs, sessions, stale_after)


LlmStatus = Literal["configured", "none", "missing_key"]


@dataclass(frozen=True)
class LlmHealth:
    status: LlmStatus
    provider: str  # "none" when no LLM is configured

    @property
    def configured(self) -> bool:
        return self.status == "configured"


def llm_health(*, provider: str, has_key: bool, has_base_url: bool = False) -> LlmHealth:
    """Mirrors the providers: a key is needed unless a base URL names a local compatible server."""
    provider = (provider or "none").strip().lower()
    if provider == "none":
        return LlmHealth("none", "none")
    return LlmHealth("configured" if has_key or has_base_url else "missing_key", provider)


# --- the dashboard banner ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Banner:
    """One product-level problem with its one-line fix (``command`` shown as code when set; ``link``, the
    page where it is fixed, instead of the system page's)."""

    kind: Literal["worker", "llm", "budget", "suspension"]
    message: str
    fix: str
    command: str = ""
    link: str = ""
    link_text: str = ""

    @property
    def text(self) -> str:
        return f"{self.message} {self.fix}" + (f" `{self.command}`" if self.command else "")


def age_text(seconds: float) -> str:
    """A short human age: "40 seconds", "1 minute", "3 hours", "2 days"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    n = int(seconds)
    return f"{n} second{'s' if n != 1 else ''}"


def worker_banner(worker: WorkerHealth) -> Banner | None:
    if not worker.down:
        return None
    if worker.last_probe_age is None:
        message = "No background worker has run yet: submitted sessions, consolidations and scheduled jobs wait."
    else:
        message = (
            f"The background worker was last seen {age_text(worker.last_probe_age)} ago: submitted "
            "sessions, consolidations and scheduled jobs wait."
        )
    if not worker.scheduled:
        return Banner(
            "worker",
            message,
            "Create the schedules, then start the worker:",
            f"{SCHEDULES_COMMAND} && {WORKER_COMMAND}",
        )
    return Banner("worker", message, "Start the worker:", WORKER_COMMAND)


def llm_banner(llm: LlmHealth) -> Banner | None:
    if llm.status == "configured":
        return None
    if llm.status == "missing_key":
        return Banner(
            "llm",
            f"LLM_PROVIDER={llm.provider} has no API key: sessions cannot be distilled.",
            "Set LLM_API_KEY, then restart the service (docs/configuration.md#llm).",
        )
    return Banner(
        "llm",
        "No LLM is configured: submitted sessions are kept and wait to be distilled.",
        "Set LLM_PROVIDER and LLM_API_KEY, then restart the service (docs/configuration.md#llm).",
    )


def status_banners(*, worker: WorkerHealth, llm: LlmHealth) -> list[Banner]:
    return [b for b in (worker_banner(worker), llm_banner(llm)) if b is not None]
