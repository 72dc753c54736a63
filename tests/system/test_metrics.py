"""/metrics (docs/observability.md#metrics): prometheus-client in multiprocess mode sums every process,
dry runs are labelled, the state gauges come from the database at scrape time, and only allowed networks
or the METRICS_TOKEN may read it."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from consolidation.metrics import consolidation_run_observe
from memories.models import AgentSession, Memory
from reasoningbank.ai.llm import LLMResult, LLMTransientError
from reasoningbank.ai.metered import llm_complete
from reasoningbank.metrics import WRITE_BEHIND
from reasoningbank.models import WorkerHeartbeat
from system.selectors import health_cache_clear, memories_by_tier_get
from tests.factories import AgentSessionFactory, ConsolidationRunFactory, MemoryFactory

REPO = Path(__file__).resolve().parents[2]
TOKEN = "metrics-secret-0123456789abcdef"


@pytest.fixture(autouse=True)
def fresh_state(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    settings.METRICS_ALLOWED_NETWORKS = ["127.0.0.1/32", "::1/128"]
    settings.METRICS_TOKEN = ""
    health_cache_clear()
    yield
    health_cache_clear()


def scrape(client: Any, **extra: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a /metrics answer: (name, sorted labels) → value."""
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


# --- across processes -----------------------------------------------------------------------------------

CHILD = """
import sys
from reasoningbank import metrics

written, seconds = int(sys.argv[1]), float(sys.argv[2])
metrics.WRITE_BEHIND.labels(outcome="written", work="metrics_test").inc(written)
metrics.SEARCH_DURATION.labels(mode="standard", transport="rest").observe(seconds)
"""


def test_metrics_sum_the_counters_and_histograms_of_every_process(client, db, tmp_path, monkeypatch):
    """Two processes (as two uvicorn workers, or a web worker and a qcluster worker) write to one
    PROMETHEUS_MULTIPROC_DIR; a scrape served by a third sees the sum of both."""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for written, seconds in ((3, "0.02"), (4, "0.2")):
        subprocess.run([sys.executable, "-c", CHILD, str(written), seconds], cwd=REPO, env=env, check=True, timeout=60)
    WRITE_BEHIND.labels(outcome="written", work="only_in_this_process").inc()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    response = client.get("/metrics")
    samples = scrape(client)

    assert not response.content.startswith(b"# PROMETHEUS_MULTIPROC_DIR is not set")
    assert value(samples, "reasoningbank_write_behind_total", outcome="written", work="metrics_test") == 7
    histogram = {"mode": "standard", "transport": "rest"}
    assert value(samples, "reasoningbank_search_duration_seconds_count", **histogram) == 2
    assert value(samples, "reasoningbank_search_duration_seconds_sum", **histogram) == pytest.approx(0.22)
    assert value(samples, "reasoningbank_search_duration_seconds_bucket", **histogram, le="0.025") == 1
    assert value(samples, "reasoningbank_search_duration_seconds_bucket", **histogram, le="0.25") == 2
    # the files are the truth in multiprocess mode: this process's in-memory registry is not served
    assert value(samples, "reasoningbank_write_behind_total", outcome="written", work="only_in_this_process") is None
    assert value(samples, "reasoningbank_state_up") == 1  # the database gauges come along


def test_without_a_multiprocess_directory_the_process_registry_is_served_and_says_so(client, db):
    WRITE_BEHIND.labels(outcome="written", work="dev_process").inc(2)
    response = client.get("/metrics")
    assert response.content.startswith(b"# PROMETHEUS_MULTIPROC_DIR is not set")
    assert response["Content-Type"].startswith("text/plain")
    samples = scrape(client)
    assert value(samples, "reasoningbank_write_behind_total", outcome="written", work="dev_process") >= 2


# --- what is counted ---------------------------------------------------------------------------------------


def test_a_dry_run_is_labelled_and_never_counted_as_real_merges(client, db):
    before = scrape(client)
    consolidation_run_observe(
        status="completed",
        trigger="manual",
        dry_run=True,
        counters={"duplicates_merged": 2, "archived": 3, "processed": 10},
        duration_seconds=1.5,
    )
    after = scrape(client)

    def grew(name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0) - (value(before, name, **labels) or 0)

    assert grew("reasoningbank_consolidation_duplicates_merged_total", dry_run="true") == 2
    assert grew("reasoningbank_consolidation_memories_archived_total", dry_run="true") == 3
    assert grew("reasoningbank_consolidation_memories_processed_total", dry_run="true") == 10
    assert grew("reasoningbank_consolidation_duplicates_merged_total", dry_run="false") == 0
    assert grew("reasoningbank_consolidation_runs_total", status="completed", trigger="manual", dry_run="true") == 1
    assert grew("reasoningbank_consolidation_run_duration_seconds_count", dry_run="true") == 1


class ScriptedLLM:
    provider, model = "openai", "gpt-test"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> LLMResult:
        if self.fail:
            raise LLMTransientError("rate limited", provider=self.provider, model=self.model, attempts=3)
        return LLMResult(
            "reply", self.provider, self.model, input_tokens=120, output_tokens=30, latency_ms=800, attempts=1
        )


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_llm_calls_count_requests_tokens_latency_and_errors_by_provider_model_and_purpose(cast):
    labels = {"provider": "openai", "model": "gpt-test", "purpose": "distill"}
    before = {
        "ok": sample("reasoningbank_llm_requests_total", **labels, outcome="ok"),
        "error": sample("reasoningbank_llm_requests_total", **labels, outcome="error"),
        "input": sample("reasoningbank_llm_tokens_total", **labels, direction="input"),
        "output": sample("reasoningbank_llm_tokens_total", **labels, direction="output"),
        "latency": sample("reasoningbank_llm_latency_seconds_sum", **labels),
        "transient": sample("reasoningbank_llm_errors_total", **labels, error="transient"),
    }
    llm_complete(organization=cast.org_a, purpose="distill", system="s", prompt="p", llm=ScriptedLLM())
    with pytest.raises(LLMTransientError):
        llm_complete(organization=cast.org_a, purpose="distill", system="s", prompt="p", llm=ScriptedLLM(fail=True))

    assert sample("reasoningbank_llm_requests_total", **labels, outcome="ok") == before["ok"] + 1
    assert sample("reasoningbank_llm_requests_total", **labels, outcome="error") == before["error"] + 1
    assert sample("reasoningbank_llm_tokens_total", **labels, direction="input") == before["input"] + 120
    assert sample("reasoningbank_llm_tokens_total", **labels, direction="output") == before["output"] + 30
    assert sample("reasoningbank_llm_latency_seconds_sum", **labels) == pytest.approx(before["latency"] + 0.8)
    assert sample("reasoningbank_llm_errors_total", **labels, error="transient") == before["transient"] + 1


def test_searches_and_context_injections_are_counted_by_mode_and_transport(cast, token_client, agent):
    client = token_client(cast.org_a)
    MemoryFactory(principal=agent, title="Set HTTP client timeouts", content="Always set connect and read timeouts.")
    searches = sample("reasoningbank_search_duration_seconds_count", mode="standard", transport="rest")
    found = sample("reasoningbank_recalls_total", mode="standard", transport="rest", found="true")
    injections = sample("reasoningbank_injections_total", source="procedural_memories", transport="rest")
    entries = sample("reasoningbank_injection_entries_total", kind="memory")

    found_body = client.post("/api/v1/memories/search", {"query": "http timeouts", "min_confidence": 0}, format="json")
    assert found_body.json()["memories"]
    assert client.post("/api/v1/memories/context", {"project": "web-app"}, format="json").status_code == 200

    assert sample("reasoningbank_search_duration_seconds_count", mode="standard", transport="rest") == searches + 1
    assert sample("reasoningbank_recalls_total", mode="standard", transport="rest", found="true") == found + 1
    assert sample("reasoningbank_injections_total", source="procedural_memories", transport="rest") == injections + 1
    assert sample("reasoningbank_injection_entries_total", kind="memory") == entries + 1


# --- the state gauges -----------------------------------------------------------------------------------


def test_the_gauges_read_queue_tiers_waiting_work_and_the_heartbeat_from_the_database(client, cast, agent):
    now = timezone.now()
    for tier in ("hot", "hot", "warm", "cold"):
        MemoryFactory(principal=agent, tier=tier)
    Memory.objects.filter(tier="cold").update(tier="archived", state=Memory.STATE_ARCHIVED)
    ConsolidationRunFactory(project=cast.project_a, created_at=now - timedelta(minutes=7))
    AgentSessionFactory(project=cast.project_b, external_id="due", updated_at=now - timedelta(seconds=30))
    AgentSessionFactory(project=cast.project_a, external_id="w1", status=AgentSession.STATUS_WAITING)
    AgentSessionFactory(project=cast.project_b, external_id="w2", status=AgentSession.STATUS_WAITING)
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=now - timedelta(seconds=42))

    samples = scrape(client)

    assert value(samples, "reasoningbank_queue_depth", queue="consolidation_runs") == 1
    assert 415 < value(samples, "reasoningbank_queue_oldest_age_seconds", queue="consolidation_runs") < 440
    assert value(samples, "reasoningbank_queue_depth", queue="sessions") == 1
    assert value(samples, "reasoningbank_queue_depth", queue="tasks") == 0
    assert value(samples, "reasoningbank_queue_oldest_age_seconds", queue="tasks") == 0
    assert value(samples, "reasoningbank_queue_stalled_after_seconds") == 300
    assert value(samples, "reasoningbank_memories", tier="hot") == 2
    assert value(samples, "reasoningbank_memories", tier="warm") == 1
    assert value(samples, "reasoningbank_memories", tier="cold") == 0
    assert value(samples, "reasoningbank_memories", tier="archived") == 1
    assert value(samples, "reasoningbank_waiting_for_llm", work="sessions") == 2
    assert value(samples, "reasoningbank_waiting_for_llm", work="consolidation_runs") == 0
    assert value(samples, "reasoningbank_worker_up") == 1
    assert 40 < value(samples, "reasoningbank_worker_heartbeat_age_seconds") < 60
    assert value(samples, "reasoningbank_state_up") == 1


def test_without_a_heartbeat_the_worker_is_down_and_no_age_is_made_up(client, db, monkeypatch):
    monkeypatch.setattr("system.selectors.process_booted_at", lambda: timezone.now() - timedelta(hours=1))
    samples = scrape(client)
    assert value(samples, "reasoningbank_worker_up") == 0
    assert not any(name == "reasoningbank_worker_heartbeat_age_seconds" for name, _ in samples)


def test_on_a_large_bank_the_tiers_are_counted_on_a_sample_and_scaled(cast, agent, django_assert_num_queries):
    for tier in ("hot", "hot", "hot", "warm"):
        MemoryFactory(principal=agent, tier=tier)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")  # the estimate is PostgreSQL's (-1 until analysed)
    # the threshold at 0 stands in for a bank past 50,000 memories: its estimate and one sampled count
    with django_assert_num_queries(2) as queries:
        counts = memories_by_tier_get(exact_below=0, sample_percent=100)
    assert counts == {"hot": 3, "warm": 1, "cold": 0, "archived": 0}
    assert "TABLESAMPLE SYSTEM" in queries.captured_queries[1]["sql"]


def test_no_org_project_or_memory_appears_in_the_labels(client, cast, agent):
    memory = MemoryFactory(principal=agent)
    text = client.get("/metrics").content.decode()
    assert "acme" not in text and "web-app" not in text and memory.id not in text


# --- protection -------------------------------------------------------------------------------------------


def test_metrics_are_refused_from_an_address_outside_the_allowed_networks(client, db):
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "metrics_forbidden"
    assert "METRICS_ALLOWED_NETWORKS (127.0.0.1/32, ::1/128)" in body["detail"] and "203.0.113.9" in body["detail"]
    assert "set METRICS_TOKEN" in body["detail"]


def test_an_address_inside_a_configured_network_may_scrape(client, db, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_ipv4_mapped_loopback_counts_as_loopback(client, db):
    assert client.get("/metrics", REMOTE_ADDR="::ffff:127.0.0.1").status_code == 200


def test_a_wrong_token_is_refused_even_from_an_allowed_address(client, db, settings):
    settings.METRICS_TOKEN = TOKEN
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert response.status_code == 401
    assert response.json()["code"] == "metrics_token_invalid"
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_without_a_token_from_outside_the_fix_names_the_token(client, db, settings):
    settings.METRICS_TOKEN = TOKEN
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 403 and "send 'Authorization: Bearer <METRICS_TOKEN>'" in response.json()["detail"]


def test_the_right_token_is_accepted_from_any_address(client, db, settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []
    samples = scrape(client, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert value(samples, "reasoningbank_state_up") == 1


def test_a_bearer_token_is_refused_when_no_metrics_token_is_configured(client, db):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 401 and "No METRICS_TOKEN is configured" in response.json()["detail"]
