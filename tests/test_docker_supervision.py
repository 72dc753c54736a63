"""Supervision under docker compose (docker/compose.yaml, docs/operations.md): what scripts/run.sh
does for a local run — restart a dead web, worker or database, each on its own — Docker's restart
policies do for compose. Read with PyYAML: Docker cannot run where the tests run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[1] / "docker" / "compose.yaml"
LONG_RUNNING = ("db", "web", "worker", "webhooks")
# restarted whatever the exit status, but not after `docker compose stop` (unless-stopped) or never
RESTARTING = {"always", "unless-stopped"}


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return dict(data["services"])


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_every_long_running_service_is_restarted_when_it_exits(services, name):
    assert services[name].get("restart") in RESTARTING, f"{name} is not restarted by Docker when it dies"


def test_the_one_shot_migration_is_not_restarted(services):
    assert services["migrate"].get("restart") == "no"


def test_a_dead_worker_or_database_never_takes_web_down_with_it(services):
    """Web waits for the database and the migration at its first start only (compose's depends_on
    conditions); nothing makes it stop or restart with the worker."""
    for name in ("web", "worker", "webhooks"):
        depends = services[name].get("depends_on") or {}
        assert all(not (isinstance(rule, dict) and rule.get("restart")) for rule in depends.values()), name
    assert "worker" not in (services["web"].get("depends_on") or {})
    assert "webhooks" not in (services["web"].get("depends_on") or {})


def test_the_worker_gets_time_to_finish_its_task_when_stopped(services):
    grace = str(services["worker"].get("stop_grace_period", "10s"))
    assert grace.endswith("s") and int(grace[:-1]) >= 60


def test_the_webhook_worker_takes_the_queue_deliveries_are_sent_to(services):
    """Compose and run.sh start the webhook worker on WEBHOOKS_CLUSTER: a name that differs would leave
    every delivery queued with nobody to take it."""
    from reasoningbank.settings.webhooks import WEBHOOKS_CLUSTER

    assert f"Q_CLUSTER_NAME={WEBHOOKS_CLUSTER} exec python manage.py qcluster" in services["webhooks"]["command"]
    run_sh = (COMPOSE.parents[1] / "scripts" / "run.sh").read_text(encoding="utf-8")
    assert f"\nWEBHOOKS_CLUSTER={WEBHOOKS_CLUSTER}\n" in run_sh
    assert 'Q_CLUSTER_NAME="$WEBHOOKS_CLUSTER" spawn_group .venv/bin/python manage.py qcluster' in run_sh
