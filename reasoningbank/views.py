"""Operator endpoints."""

from __future__ import annotations

import time

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from reasoningbank.metrics import metrics_text


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers, 503 otherwise. No auth: load balancers call it."""
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        database = "ok"
    except Exception as exc:  # any database failure means "not ready"
        connection.close_if_unusable_or_obsolete()
        return JsonResponse({"status": "error", "database": "unavailable", "error": type(exc).__name__}, status=503)
    return JsonResponse(
        {"status": "ok", "database": database, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}
    )


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus counters of this process (consolidation cycles, merges, contradictions, …)."""
    return HttpResponse(metrics_text(), content_type="text/plain; version=0.0.4")
