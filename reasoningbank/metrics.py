"""In-process counters, exposed in Prometheus text format at ``/metrics`` (per process)."""

from __future__ import annotations

import threading
from collections import defaultdict

_lock = threading.Lock()
_counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)


def counter_add(name: str, value: float = 1, **labels: str) -> None:
    key = (name, tuple(sorted((k, str(v)) for k, v in labels.items())))
    with _lock:
        _counters[key] += value


def counters_snapshot() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with _lock:
        return dict(_counters)


def metrics_text() -> str:
    lines = []
    for (name, labels), value in sorted(counters_snapshot().items()):
        label_text = ",".join(f'{k}="{v}"' for k, v in labels)
        lines.append(
            f"reasoningbank_{name}{{{label_text}}} {value:g}" if label_text else f"reasoningbank_{name} {value:g}"
        )
    return "\n".join(lines) + "\n"
