"""Operator endpoints."""

from __future__ import annotations

import time
from typing import Any

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from reasoningbank.ai.llm import llm_health_get
from reasoningbank.health import Backlog, LlmHealth, QueueHealth, WorkerHealth, worker_banner
from reasoningbank.metrics import metrics_text
from reasoningbank.selectors import queue_health_cached, worker_health_cached


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers, 503 otherwise (no auth: load balancers call it). The other
    parts are reported, never fatal: ``worker`` (its heartbeat), ``queue`` (how long work has been
    waiting), ``llm`` (the configured provider or "none"); see reasoningbank/health.py."""
    started = time.perf_counter()
    llm = _llm_part(llm_health_get())
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not ready"
        connection.close_if_unusable_or_obsolete()
        return JsonResponse(
            {"status": "error", "database": "unavailable", "error": type(exc).__name__, "llm": llm}, status=503
        )
    body: dict[str, Any] = {
        "status": "ok",
        "database": "ok",
        "latency_ms": round((time.perf_counter() - started) * 1000, 2),
    }
    try:
        body["worker"] = _worker_part(worker_health_cached())
        body["queue"] = _queue_part(queue_health_cached())
    except DatabaseError as exc:  # e.g. migrations not applied yet: say so, the database itself answered
        body.setdefault("worker", {"status": "unknown", "error": type(exc).__name__})
        body["queue"] = {"status": "unknown", "error": type(exc).__name__}
    body["llm"] = llm
    return JsonResponse(body)


def _age(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _worker_part(worker: WorkerHealth) -> dict[str, Any]:
    part: dict[str, Any] = {
        "status": worker.status,
        "last_heartbeat_age_seconds": _age(worker.last_heartbeat_age),
        "stale_after_seconds": worker.stale_after,
    }
    banner = worker_banner(worker)
    if banner is not None:
        part["fix"] = f"{banner.fix} {banner.command}"
    return part


def _backlog_part(backlog: Backlog) -> dict[str, Any]:
    return {"depth": backlog.count, "oldest_age_seconds": _age(backlog.oldest_age)}


def _queue_part(queue: QueueHealth) -> dict[str, Any]:
    parts = {"tasks": queue.tasks, "consolidation_runs": queue.runs, "sessions": queue.sessions}
    measured = [b for b in parts.values() if b is not None]
    ages = [b.oldest_age for b in measured if b.oldest_age is not None]
    return {
        "status": queue.status,
        "depth": sum(b.count for b in measured),
        "oldest_age_seconds": _age(max(ages, default=None)),
        "stalled_after_seconds": queue.stalled_after,
        # tasks: django-q2's ORM broker queue (null with another broker); runs and sessions still queued
        **{name: None if b is None else _backlog_part(b) for name, b in parts.items()},
    }


def _llm_part(llm: LlmHealth) -> dict[str, Any]:
    return {"status": llm.status, "provider": llm.provider}


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus counters of this process (consolidation cycles, merges, contradictions, …)."""
    return HttpResponse(metrics_text(), content_type="text/plain; version=0.0.4")
