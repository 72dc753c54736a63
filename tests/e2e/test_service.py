"""run.sh as a user starts it: web, worker and database up, and no debug pages served."""

from __future__ import annotations

import httpx2

from tests.e2e.harness import Service, describe


def test_run_sh_starts_the_web_server_the_worker_and_the_embedded_database(service: Service) -> None:
    kinds = {proc.kind for proc in service.running()}
    assert {"uvicorn", "qcluster", "postgres"} <= kinds, describe(service.running())
    assert httpx2.get(f"{service.url}/healthz", timeout=10).json()["status"] == "ok"


def test_run_sh_serves_no_debug_pages_when_debug_is_not_set(service: Service) -> None:
    response = httpx2.get(f"{service.url}/no-such-page-e2e/", timeout=10)
    assert response.status_code == 404
    # Django's technical 404 (DEBUG on) lists the URLconf's patterns to anyone who asks
    assert "URLconf" not in response.text and "DEBUG = True" not in response.text, response.text[:500]
