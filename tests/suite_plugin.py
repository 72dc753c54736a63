"""The suite's own pytest plugin, loaded first (``-p tests.suite_plugin`` in pyproject.toml's addopts):
bytecode for a fast start, and the four tiers every test is sorted into (docs/contributing.md#running-the-tests).

Tiers, decided by what a test uses, never by a list:

* ``e2e``: under tests/e2e (or marked ``e2e``): the real service started with scripts/run.sh;
* ``browser``: drives Chromium (the ``browser`` fixture of tests/browser/conftest.py, or the ``browser`` mark);
* ``database``: needs PostgreSQL: the test database (pytest-django's ``django_db`` mark, or a fixture that
  reaches it: ``db``, ``transactional_db``, ``live_server``, ...) or a server of its own (tests/pg_servers.py,
  tests/pgbouncer.py);
* ``pure``: everything else (pytest-django refuses such a test any query).

Every test gets the mark of its tier; a test that would carry two (say, hand-marked ``pure`` but using
``db``) stops the run before it starts. ``-m pure``, ``-m "pure or database"`` select by tier.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Python compiles every module it imports and, unless told not to, keeps the result in __pycache__.
# Some environments set PYTHONDONTWRITEBYTECODE=1; then every run compiles Django, DRF and the project
# afresh (about 1,000 modules: seconds of every start). The test loop keeps its bytecode (git-ignored).
sys.dont_write_bytecode = False


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM stops a run as Ctrl-C does, its fixtures' teardown included: ./scripts/test.sh runs the
    end-to-end tests as background jobs, which ignore SIGINT, and stops them with SIGTERM; they must stop
    the services and PostgreSQL servers they started. (Not in a pytest-xdist worker: its controller
    stops it.)"""
    if "PYTEST_XDIST_WORKER" not in os.environ and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupted)


TIERS = ("pure", "database", "browser", "e2e")
E2E_DIR = Path(__file__).resolve().parent / "e2e"
# pytest-django's fixtures that open the test database (a fixture of ours that needs it requests one of them)
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}
)
# the helpers that start PostgreSQL servers of a test's own (replicas, a server behind PgBouncer)
OWN_SERVER_MODULES = frozenset({"tests.pg_servers", "tests.pgbouncer"})


def _uses_own_server(module: ModuleType | None) -> bool:
    if module is None:
        return False
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if name in OWN_SERVER_MODULES:
            return True
    return False


def item_tier(item: pytest.Item) -> str:
    """The tier of one collected test, from its marks, its fixtures and what its module uses."""
    fixtures = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("e2e") or E2E_DIR in Path(str(item.path)).parents:
        return "e2e"
    if item.get_closest_marker("browser") or "browser" in fixtures:
        return "browser"
    if item.get_closest_marker("django_db") or fixtures & DATABASE_FIXTURES:
        return "database"
    if _uses_own_server(getattr(item, "module", None)):
        return "database"
    return "pure"


def tier_conflicts(items: list[pytest.Item]) -> list[str]:
    """``nodeid: marks`` of every test whose tier marks are not exactly one."""
    conflicts = []
    for item in items:
        marks = sorted({mark.name for mark in item.iter_markers() if mark.name in TIERS})
        if len(marks) != 1:
            conflicts.append(f"{item.nodeid}: {', '.join(marks) or 'no tier'}")
    return conflicts


# First: before pytest's ``-m`` deselection.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(getattr(pytest.mark, item_tier(item)))
    conflicts = tier_conflicts(items)
    if conflicts:
        listed = "\n  ".join(conflicts)
        raise pytest.UsageError(f"tests in more than one tier (tests/suite_plugin.py decides them):\n  {listed}")


# The end-to-end tests share one running service and run in their order (tests/e2e/conftest.py): under
# pytest-xdist they are one work unit, run by one worker while the others take the rest. (pytest-xdist's
# own ``xdist_group`` mark does not group them under pytest 9: it renames a node id attribute that
# pytest 9 no longer reads.) The controller sees node ids only, relative to the repository.
E2E_NODEID_PREFIX = "tests/e2e/"


# A module whose fixtures outlive one test (a replica pair, a PgBouncer, a loaded embedder: up to two
# minutes to set up), or whose tests share what a module-level cached function computed (an import graph,
# every test file parsed: seconds each), is one work unit too, so that one worker does it once rather than
# every worker that draws one of its tests. The rest go one test at a time, which balances the workers best.
SHARED_FIXTURE = re.compile(r"""scope=["'](module|package|session)["']|^@(functools\.)?(cache|lru_cache)\b""", re.M)


@functools.cache
def module_fixtures_shared(path: Path) -> bool:
    return path.is_file() and bool(SHARED_FIXTURE.search(path.read_text(errors="replace")))


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown where it is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class EndToEndTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(E2E_NODEID_PREFIX):
                return "e2e"
            module = nodeid.split("::", 1)[0]
            return module if module_fixtures_shared(config.rootpath / module) else nodeid

    return EndToEndTogether(config, log)
