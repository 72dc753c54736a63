"""The operator's routes: probes and the metrics scrape (no login; /metrics by network or token), and
the dashboard's system page (org admins, staff)."""

from django.urls import path

from system.views import healthz, metrics, readyz, readyz_worker
from system.views_llm_check import system_llm_check
from system.views_system import system_page

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("readyz/worker", readyz_worker, name="readyz-worker"),
    path("metrics", metrics, name="metrics"),
    path("system/", system_page, name="system-status"),
    path("system/llm-check/", system_llm_check, name="system-llm-check"),
]
