"""How long a project whose consolidation runs keep failing waits before its next automatic run
(pure: no Django). docs/operations.md"""

from __future__ import annotations

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


def failure_backoff(failures: int, *, base: float, cap: float) -> float:
    """Seconds to wait after the ``failures``-th failure in a row: ``base`` after the first, twice as
    long after each next one, never more than ``cap``; 0 when nothing failed."""
    if failures <= 0:
        return 0.0
    # 2**(failures - 1) grows past any cap quickly: stop doubling before the float overflows
    return float(min(cap, base * 2 ** min(failures - 1, 64)))
