"""Small helpers shared by bench/distill.py and bench/consolidate.py (statistics, machine, JSON).

``bench/common.py`` (owned by the search benchmark) has similar helpers; these stay separate so the
two sets of scripts can evolve independently, but the machine description is taken from it when
it is importable so all results describe the machine the same way.
"""

from __future__ import annotations

import json
import os
import platform
import resource
from pathlib import Path
from typing import Any


def latency(samples_ms: list[float]) -> dict[str, float | int]:
    import numpy as np

    a = np.asarray(samples_ms, dtype=float)
    if a.size == 0:
        return {
            "n": 0,
            "mean": float("nan"),
            "p50": float("nan"),
            "p90": float("nan"),
            "p99": float("nan"),
            "min": float("nan"),
            "max": float("nan"),
        }
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {
        "n": int(a.size),
        "mean": round(float(a.mean()), 3),
        "p50": round(float(p50), 3),
        "p90": round(float(p90), 3),
        "p99": round(float(p99), 3),
        "min": round(float(a.min()), 3),
        "max": round(float(a.max()), 3),
    }


def machine() -> dict[str, Any]:
    try:
        from bench.common import machine_info

        info = machine_info()
    except Exception:  # common.py missing or changed: describe the machine ourselves
        info = {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    return info


def postgres() -> dict[str, Any]:
    from django.db import connection

    out: dict[str, Any] = {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        out["version"] = cursor.fetchone()[0].split(" on ")[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        out["pgvector"] = row[0] if row else None
        for name in (
            "shared_buffers",
            "work_mem",
            "maintenance_work_mem",
            "effective_cache_size",
            "max_parallel_workers_per_gather",
            "jit",
        ):
            cursor.execute(f"SHOW {name}")
            out[name] = cursor.fetchone()[0]
    return out


# the product code the distillation and consolidation figures depend on (tests/test_references.py checks
# that each exists: a missing one would silently drop out of the fingerprint)
CODE_FILES = (
    "consolidation/runs.py",
    "consolidation/run_state.py",
    "consolidation/graph.py",
    "consolidation/phases/duplicates.py",
    "consolidation/phases/clusters.py",
    "consolidation/selectors.py",
    "consolidation/clustering.py",
    "memories/models.py",
    "memories/core/services.py",
    "memories/sessions/prompts.py",
    "memories/sessions/services.py",
    "reasoningbank/ai/metered.py",
    "reasoningbank/settings/consolidation.py",
    "reasoningbank/settings/database.py",
)


def code_fingerprint(repo: Path) -> dict[str, Any]:
    """Which product code was measured (other people edit it concurrently; no git here): a short
    sha256 per file that matters plus the migrations present."""
    import hashlib

    out: dict[str, Any] = {}
    for name in CODE_FILES:
        path = repo / name
        if path.exists():
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    out["migrations"] = sorted(f"{p.parent.parent.name}/{p.stem}" for p in repo.glob("*/migrations/0*.py"))
    return out


def max_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
