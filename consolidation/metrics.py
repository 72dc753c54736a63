"""Prometheus metrics of consolidation runs (docs/observability.md#metrics): runs by status,
trigger and ``dry_run``, their wall time, and one counter per run counter a phase declares with a
``metric`` name (``consolidation.phases.registry``) — a new phase's counter is exported without an
edit here. Every one carries ``dry_run``: a dry run's proposals are counted with ``dry_run="true"``,
so ``dry_run="false"`` counts only real changes. Imported once the phases are discovered (the app's
``ready``); multiprocess mode and the exposition are ``reasoningbank/metrics.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import Counter, Histogram

from consolidation.phases.registry import run_counters
from reasoningbank.metrics import PREFIX, label_bool

CONSOLIDATION_RUNS = Counter(
    f"{PREFIX}_consolidation_runs", "Consolidation runs finished", ["status", "trigger", "dry_run"]
)
CONSOLIDATION_RUN_DURATION = Histogram(
    f"{PREFIX}_consolidation_run_duration_seconds",
    "Wall time of a consolidation run (skipped runs not observed)",
    ["dry_run"],
    buckets=(1, 5, 10, 30, 60, 120, 300, 600, 1200, 3600),
)
# run.counters key → counter (a dry run's proposals under dry_run="true")
CONSOLIDATION_COUNTERS: dict[str, Counter] = {
    c.key: Counter(f"{PREFIX}_consolidation_{c.metric}", c.help, ["dry_run"]) for c in run_counters() if c.metric
}


def consolidation_run_observe(
    *, status: str, trigger: str, dry_run: bool, counters: Mapping[str, int], duration_seconds: float | None
) -> None:
    """A finished run's counters (``ConsolidationRun.counters``) and duration, labelled ``dry_run``."""
    dry = label_bool(dry_run)
    CONSOLIDATION_RUNS.labels(status=status, trigger=trigger, dry_run=dry).inc()
    for key, counter in CONSOLIDATION_COUNTERS.items():
        value = counters.get(key, 0)
        if value:
            counter.labels(dry_run=dry).inc(value)
    if duration_seconds is not None:
        CONSOLIDATION_RUN_DURATION.labels(dry_run=dry).observe(duration_seconds)
