"""Prometheus counters and histograms (docs/observability.md#metrics), correct across processes.

With ``PROMETHEUS_MULTIPROC_DIR`` set (``scripts/run.sh``, the docker image) prometheus-client runs in
multiprocess mode: every process — each uvicorn worker, each process the django-q2 cluster forks —
writes its values to its own files in that directory, and ``/metrics`` merges them all, so every
scrape sees the whole service whichever web worker answers. Without it (development, tests)
``/metrics`` shows the answering process's own registry. The variable must be set before this
module is imported (prometheus-client picks its storage then), and the directory emptied when the
service starts (run.sh does both).

Gauges that are state rather than events (queue depth and age, memories per tier, sessions waiting
for an LLM, the worker's heartbeat age) are not kept here: ``system/metrics_scrape.py`` reads
them from the database at scrape time. No process holds a copy that could go stale, and no gauge of
a process that exited needs cleaning up (prometheus-client's ``mark_process_dead`` only matters for
``live*`` gauges, of which there are none; counters and histograms of an exited process rightly stay
in the sums).

Labels are bounded: modes, transports, providers, models, purposes, outcomes, ``dry_run`` — never an
org, project, memory or token id. An app may define its own metrics with ``PREFIX`` (the consolidation
run's counters are ``consolidation/metrics.py``'s, one per counter its phases declare).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
if os.environ.get(MULTIPROC_ENV):  # a fresh container or a manage.py shell: the files go there
    os.makedirs(os.environ[MULTIPROC_ENV], exist_ok=True)

from prometheus_client import (  # noqa: E402  (after the directory exists)
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector  # noqa: E402
from prometheus_client.registry import Collector  # noqa: E402

from reasoningbank.request_context import request_transport  # noqa: E402

PREFIX = "reasoningbank"

# --- LLM calls (every one goes through reasoningbank/ai/metered.py) ----------------------------------------

LLM_REQUESTS = Counter(
    f"{PREFIX}_llm_requests", "LLM calls, by outcome (ok or error)", ["provider", "model", "purpose", "outcome"]
)
LLM_TOKENS = Counter(
    f"{PREFIX}_llm_tokens",
    "LLM tokens used, by direction (input or output)",
    ["provider", "model", "purpose", "direction"],
)
# a share of the input tokens above (never added to them): read from or written to the provider's prompt
# cache (docs/llm.md#prompt-caching); a separate counter so that summing llm_tokens over direction stays right
LLM_CACHED_TOKENS = Counter(
    f"{PREFIX}_llm_cached_tokens",
    "Input tokens the provider read from its prompt cache (kind=read) or wrote to it (kind=write)",
    ["provider", "model", "purpose", "kind"],
)
LLM_LATENCY = Histogram(
    f"{PREFIX}_llm_latency_seconds",
    "Wall time of a successful LLM call, retries and backoff included",
    ["provider", "model", "purpose"],
    buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120),
)
LLM_ERRORS = Counter(
    f"{PREFIX}_llm_errors",
    "Failed LLM calls, by kind (transient: outlasted the retries; permanent: refused; other)",
    ["provider", "model", "purpose", "error"],
)

# budgets (reasoningbank/ai/budget.py, docs/llm-spend.md): a refused call waits for the period's turn
LLM_BUDGET_REFUSALS = Counter(
    f"{PREFIX}_llm_budget_refusals",
    "LLM calls refused because they would cross a cap (the work waits), by cap (daily, monthly) and its source",
    ["cap", "source"],
)
LLM_BUDGET_HOLDS = Counter(
    f"{PREFIX}_llm_budget_holds",
    "LLM calls held back near a cap while the calls in flight could fill it (they wait for them to settle), "
    "by cap (daily, monthly) and its source",
    ["cap", "source"],
)
LLM_BUDGET_ALERTS = Counter(
    f"{PREFIX}_llm_budget_alerts",
    "Budget alerts sent (once per organization, cap and period), by cap (daily, monthly) and its source",
    ["cap", "source"],
)

# --- search and context injection ---------------------------------------------------------------------------

SEARCH_DURATION = Histogram(
    f"{PREFIX}_search_duration_seconds",
    "memory_search latency (embedding the query, both legs, ranking, usage hand-off)",
    ["mode", "transport"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5),
)
RECALLS = Counter(
    f"{PREFIX}_recalls",
    "Searches by mode and transport; found=false when nothing came back",
    ["mode", "transport", "found"],
)
INJECTIONS = Counter(
    f"{PREFIX}_injections",
    "memory_context blocks built, by what they hold (summaries, procedural_memories, mixed, none)",
    ["source", "transport"],
)
INJECTION_REPLACEMENTS = Counter(
    f"{PREFIX}_injection_replacements", "memory_context calls that replaced an earlier block", ["transport"]
)
INJECTION_ENTRIES = Counter(f"{PREFIX}_injection_entries", "Entries injected, by kind (summary or memory)", ["kind"])
INJECTION_TOKENS = Histogram(
    f"{PREFIX}_injection_tokens",
    "Size of an injected block in tokens (~4 characters each)",
    ["transport"],
    buckets=(0, 100, 250, 500, 1000, 2000, 4000, 8000, 20000),
)

# --- background writes -------------------------------------------------------------------------------------

WRITE_BEHIND = Counter(
    f"{PREFIX}_write_behind", "Writes handed to the write-behind thread, by outcome", ["outcome", "work"]
)
USAGE_WRITE_FAILURES = Counter(
    f"{PREFIX}_usage_write_failures",
    "Usage-signal writes given up after their retries (their signals are counted as dropped)",
)
# backpressure (reasoningbank/admission.py): how long requests waited for a slot, and those that gave up
REQUEST_QUEUE_WAIT = Histogram(
    f"{PREFIX}_request_queue_wait_seconds",
    "Time a request waited for one of REQUEST_CONCURRENCY slots before its work began",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
REQUEST_QUEUE_TIMEOUTS = Counter(
    f"{PREFIX}_request_queue_timeouts", "Requests answered 503 after waiting REQUEST_QUEUE_TIMEOUT for a slot"
)
# reads safe to serve stale (reasoningbank/db_replica.py): where they went, and why not to the replica
REPLICA_READS = Counter(
    f"{PREFIX}_replica_reads",
    "Reads that may use the read replica, by where they went and why (ok, recent_write, lagging, ...)",
    ["target", "reason"],
)
# per signal (one per memory a search used): written, or dropped once every retry failed
USAGE_SIGNALS = Counter(f"{PREFIX}_usage_signals", "Usage signals of searches, by outcome", ["outcome"])
USAGE_WRITE_RETRIES = Counter(
    f"{PREFIX}_usage_write_retries",
    "Usage-signal writes tried again, by reason (deadlock, serialization, lock, database_unavailable)",
    ["reason"],
)


def label_bool(value: bool) -> str:
    return "true" if value else "false"


def search_observe(*, mode: str, seconds: float, found: bool) -> None:
    transport = request_transport()
    SEARCH_DURATION.labels(mode=mode, transport=transport).observe(seconds)
    RECALLS.labels(mode=mode, transport=transport, found=label_bool(found)).inc()


def injection_observe(*, source: str, summaries: int, memories: int, tokens: int, replaced: bool) -> None:
    """One memory_context block: ``source`` is "none" when nothing qualified."""
    transport = request_transport()
    INJECTIONS.labels(source=source, transport=transport).inc()
    if replaced:
        INJECTION_REPLACEMENTS.labels(transport=transport).inc()
    if summaries:
        INJECTION_ENTRIES.labels(kind="summary").inc(summaries)
    if memories:
        INJECTION_ENTRIES.labels(kind="memory").inc(memories)
    INJECTION_TOKENS.labels(transport=transport).observe(tokens)


# --- exposition --------------------------------------------------------------------------------------------


class _ProcessRegistry(Collector):
    """The default registry (this process's metrics, with its process_* and python_* metrics) as one
    collector of the per-scrape registry, beside the database gauges."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


def multiproc_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def metrics_render(collectors: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """The Prometheus text exposition and its content type: every process's counters and histograms
    (multiprocess mode), or this process's, then ``collectors`` (read at scrape time)."""
    registry = CollectorRegistry(auto_describe=False)  # nothing collected just to register
    path = multiproc_dir()
    if path:
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(_ProcessRegistry())
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST
