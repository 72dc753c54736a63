"""Operator endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness) and ``/metrics`` (Prometheus)."""

from __future__ import annotations

import functools
import hmac
import ipaddress
import time
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

from reasoningbank.ai.llm import llm_health_get
from reasoningbank.health import (
    Backlog,
    LlmHealth,
    QueueHealth,
    RunningHealth,
    WorkerHealth,
    age_text,
    worker_banner,
)
from reasoningbank.metrics import metrics_render, multiproc_dir
from system.metrics_scrape import DatabaseStateCollector
from system.selectors import (
    migrations_unapplied_cached,
    queue_health_cached,
    running_health_cached,
    webhook_worker_health_cached,
    worker_health_cached,
)

MIGRATE_COMMAND = ".venv/bin/python manage.py migrate"
WEBHOOK_WORKER_COMMAND = "Q_CLUSTER_NAME={cluster} .venv/bin/python manage.py qcluster"
# The parts whose failure makes /readyz 503 — this web process cannot serve — and the statuses that pass
WEB_READY_STATUSES = {"database": {"ok"}, "migrations": {"ok"}}
# The background work's parts: reported by /readyz without failing it (a load balancer must not take a
# healthy web out of rotation because a worker is down or restarting), and failing /readyz/worker
WORKER_READY_STATUSES = {
    "worker": {"ok", "starting", "inline"},
    "webhook_worker": {"ok", "starting", "inline"},
    "queue": {"ok"},
    "running": {"ok"},
}


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: this process answers. Touches nothing shared (no database), so a slow database never
    gets a web process restarted; whether the service can do its work is ``/readyz``'s question."""
    return JsonResponse({"status": "ok"})


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness of this web process, for a load balancer: 200 when ``database`` (SELECT 1) and
    ``migrations`` (none unapplied) pass, else 503 naming them in ``failing``. The background work is
    reported in the same body and summed up in ``background`` (``ok`` or ``degraded`` with its
    ``failing`` parts), never fatal here: ``worker`` (its heartbeat is fresh; ``starting`` and
    ``inline`` pass), ``webhook_worker`` (the same for the webhook worker), ``queue`` (nothing waited
    longer than ``QUEUE_STALLED_AFTER``), ``running`` (no consolidation run or session is left
    "running" by a dead worker), and ``llm`` (configured or not). No auth, no tenant data: counts and
    ages across the service."""
    body = _health_body()
    return _verdict(body, WEB_READY_STATUSES)


@never_cache
def readyz_worker(request: HttpRequest) -> JsonResponse:
    """The background work's readiness, for monitoring: the same body as ``/readyz``, 503 when any
    part of the web's or of the workers' fails (``failing`` names them)."""
    body = _health_body()
    return _verdict(body, {**WEB_READY_STATUSES, **WORKER_READY_STATUSES})


def _failing(body: dict[str, Any], statuses: dict[str, set[str]]) -> list[str]:
    return [name for name, ok in statuses.items() if body.get(name, {}).get("status") not in ok]


def _verdict(body: dict[str, Any], statuses: dict[str, set[str]]) -> JsonResponse:
    failing = _failing(body, statuses)
    answer = {"status": "error" if failing else "ok", "failing": failing, **body}
    return JsonResponse(answer, status=503 if failing else 200)


def _health_body() -> dict[str, Any]:
    started = time.perf_counter()
    body: dict[str, Any] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not ready"; the other parts cannot be read
        connection.close_if_unusable_or_obsolete()
        body["database"] = {"status": "error", "detail": f"the database does not answer ({type(exc).__name__})"}
    else:
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        body["database"] = {"status": "ok", "detail": f"answered in {latency_ms} ms", "latency_ms": latency_ms}
        body["migrations"] = _migrations_part()
        try:
            body["worker"] = _worker_part(worker_health_cached())
        except DatabaseError as exc:  # e.g. migrations not applied yet: say so, the database itself answered
            body["worker"] = {"status": "unknown", "detail": f"cannot read the heartbeat ({type(exc).__name__})"}
        try:
            body["webhook_worker"] = _webhook_worker_part(webhook_worker_health_cached())
        except DatabaseError as exc:
            unread = f"cannot read its heartbeat ({type(exc).__name__})"
            body["webhook_worker"] = {"status": "unknown", "detail": unread}
        try:
            body["queue"] = _queue_part(queue_health_cached())
        except DatabaseError as exc:
            body["queue"] = {"status": "unknown", "detail": f"cannot read the queue ({type(exc).__name__})"}
        try:
            body["running"] = _running_part(running_health_cached())
        except DatabaseError as exc:
            body["running"] = {"status": "unknown", "detail": f"cannot read the running work ({type(exc).__name__})"}
    body["llm"] = _llm_part(llm_health_get())
    background = _failing(body, WORKER_READY_STATUSES)
    # first in the body, after the verdict: what a person reading the probe's answer looks for
    return {"background": {"status": "degraded" if background else "ok", "failing": background}, **body}


def _migrations_part() -> dict[str, Any]:
    try:
        unapplied = migrations_unapplied_cached()
    except DatabaseError as exc:
        return {"status": "unknown", "detail": f"cannot read the applied migrations ({type(exc).__name__})"}
    if not unapplied:
        return {"status": "ok", "detail": "every migration is applied", "unapplied": 0}
    shown = ", ".join(unapplied[:5]) + (f" and {len(unapplied) - 5} more" if len(unapplied) > 5 else "")
    return {
        "status": "pending",
        "detail": f"{len(unapplied)} migration(s) not applied: {shown}",
        "unapplied": len(unapplied),
        "fix": f"Apply them: {MIGRATE_COMMAND}",
    }


def _age(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _worker_detail(worker: WorkerHealth) -> str:
    stale = f"stale after {age_text(worker.stale_after)}"
    if worker.status == "inline":
        return "tasks run inline (Q_SYNC): no worker to wait for"
    if worker.last_probe_age is None:
        if worker.status == "starting":
            return "no heartbeat yet; the service started moments ago"
        return "no heartbeat was ever recorded"
    seen = f"last heartbeat {age_text(worker.last_probe_age)} ago ({stale})"
    return seen + ("; the service started moments ago" if worker.status == "starting" else "")


def _worker_part(worker: WorkerHealth) -> dict[str, Any]:
    part: dict[str, Any] = {
        "status": worker.status,
        "detail": _worker_detail(worker),
        "last_heartbeat_age_seconds": _age(worker.last_probe_age),
        "stale_after_seconds": worker.stale_after,
    }
    banner = worker_banner(worker)
    if banner is not None:
        part["fix"] = f"{banner.fix} {banner.command}"
    return part


def _webhook_worker_part(worker: WorkerHealth) -> dict[str, Any]:
    part: dict[str, Any] = {
        "status": worker.status,
        "detail": _worker_detail(worker),
        "last_heartbeat_age_seconds": _age(worker.last_probe_age),
        "stale_after_seconds": worker.stale_after,
    }
    if worker.down:
        command = WEBHOOK_WORKER_COMMAND.format(cluster=settings.WEBHOOKS_CLUSTER)
        part["fix"] = f"Start the webhook worker (scripts/run.sh starts it): {command}"
    return part


def _backlog_part(backlog: Backlog) -> dict[str, Any]:
    return {"depth": backlog.count, "oldest_age_seconds": _age(backlog.oldest_age)}


def _queue_part(queue: QueueHealth) -> dict[str, Any]:
    parts = {
        "tasks": queue.tasks,
        "consolidation_runs": queue.runs,
        "sessions": queue.sessions,
        "webhook_tasks": queue.webhook_tasks,
    }
    measured = [b for b in parts.values() if b is not None]
    ages = [b.oldest_age for b in measured if b.oldest_age is not None]
    oldest = max(ages, default=None)
    limit = f"stalled after {age_text(queue.stalled_after)}"
    return {
        "status": queue.status,
        "detail": "nothing waiting" if oldest is None else f"oldest waiting item: {age_text(oldest)} ({limit})",
        "depth": sum(b.count for b in measured),
        "oldest_age_seconds": _age(oldest),
        "stalled_after_seconds": queue.stalled_after,
        # tasks, webhook_tasks: the two django-q2 queues (ORM broker; null with another broker); runs and
        # sessions still queued
        **{name: None if b is None else _backlog_part(b) for name, b in parts.items()},
    }


def _running_part(running: RunningHealth) -> dict[str, Any]:
    limit = f"no heartbeat for {age_text(running.stale_after)}, or its worker process is gone"
    if running.status == "ok":
        detail = "every running consolidation run and session has a live worker"
    else:
        detail = (
            f"{running.runs} consolidation run(s) and {running.sessions} session(s) are running without a live worker "
            f"({limit}); the sweep fails such runs and queues such sessions again within a minute"
        )
    return {
        "status": running.status,
        "detail": detail,
        "runs_without_worker": running.runs,
        "sessions_without_worker": running.sessions,
        "stale_after_seconds": running.stale_after,
    }


def _llm_part(llm: LlmHealth) -> dict[str, Any]:
    detail = {
        "configured": f"{llm.provider} is configured",
        "none": "no LLM is configured: sessions and consolidations that need one wait (not fatal)",
        "missing_key": f"LLM_PROVIDER={llm.provider} has no API key: work that needs it waits (not fatal)",
    }[llm.status]
    return {"status": llm.status, "provider": llm.provider, "detail": detail}


# --- /metrics ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _networks(cidrs: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _address_allowed(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 on a dual-stack socket is 127.0.0.1
    return any(ip in network for network in _networks(tuple(settings.METRICS_ALLOWED_NETWORKS)))


def _refused(status: int, code: str, detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail, "code": code, "errors": {}}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _metrics_refusal(request: HttpRequest) -> JsonResponse | None:
    """None when the scraper may read ``/metrics``: from ``METRICS_ALLOWED_NETWORKS`` without a token,
    or from anywhere with ``Authorization: Bearer <METRICS_TOKEN>``. A token that is sent must be right."""
    header = request.headers.get("Authorization", "")
    expected = settings.METRICS_TOKEN
    if header:
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return _refused(
                401, "metrics_token_invalid", "Malformed Authorization header; send 'Bearer <METRICS_TOKEN>'."
            )
        if not expected:
            return _refused(
                401,
                "metrics_token_invalid",
                "No METRICS_TOKEN is configured on this server, so no bearer token is accepted: set METRICS_TOKEN, "
                "or scrape without a token from an address in METRICS_ALLOWED_NETWORKS.",
            )
        if not hmac.compare_digest(raw.strip().encode(), expected.encode()):
            return _refused(401, "metrics_token_invalid", "The bearer token is not this server's METRICS_TOKEN.")
        return None
    address = request.META.get("REMOTE_ADDR", "")
    if _address_allowed(address):
        return None
    networks = ", ".join(settings.METRICS_ALLOWED_NETWORKS) or "none"
    how = (
        "send 'Authorization: Bearer <METRICS_TOKEN>'"
        if expected
        else "set METRICS_TOKEN on the server and send it as 'Authorization: Bearer <METRICS_TOKEN>'"
    )
    return _refused(
        403,
        "metrics_forbidden",
        f"/metrics is served to METRICS_ALLOWED_NETWORKS ({networks}), and {address or 'this address'} is not in "
        f"them: scrape from an allowed address, add its network to METRICS_ALLOWED_NETWORKS, or {how}.",
    )


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text exposition: the counters and histograms of every web and worker process (with
    ``PROMETHEUS_MULTIPROC_DIR``; without it, this process's own registry — development), then the state
    gauges read from the database. Protected: see ``_metrics_refusal`` and docs/observability.md#metrics."""
    refusal = _metrics_refusal(request)
    if refusal is not None:
        return refusal
    body, content_type = metrics_render([DatabaseStateCollector()])
    if multiproc_dir() is None:
        # said in the output itself, where an operator wondering about missing worker counters looks
        body = (
            b"# PROMETHEUS_MULTIPROC_DIR is not set: the counters and histograms below are this web process's "
            b"only (scripts/run.sh and the docker image set it)\n" + body
        )
    return HttpResponse(body, content_type=content_type)
