"""Every test is in exactly one tier (pure, database, browser, e2e), decided by what it uses
(tests/suite_plugin.py): ``./scripts/test.sh fast`` runs the first two, and a database test
mis-sorted as pure would be refused its queries, a browser test would open Chromium in the fast loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suite_plugin import E2E_NODEID_PREFIX, TIERS, item_tier, tier_conflicts

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent


def test_every_collected_test_carries_exactly_one_tier_mark_the_one_it_uses(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert items, "nothing collected"
    assert tier_conflicts(items) == []
    wrong = [item.nodeid for item in items if not item.get_closest_marker(item_tier(item))]
    assert wrong == []


def test_the_end_to_end_and_browser_directories_are_their_tiers(request: pytest.FixtureRequest) -> None:
    """By directory too: a test of tests/e2e that lost its mark would run in the fast loop, without the
    service its fixtures start beside the other workers."""
    for item in request.session.items:
        path = Path(str(item.path))
        if TESTS / "e2e" in path.parents:
            assert item_tier(item) == "e2e", item.nodeid
            assert item.nodeid.startswith(E2E_NODEID_PREFIX), item.nodeid  # how pytest-xdist keeps them together
        elif TESTS / "browser" in path.parents:
            assert item_tier(item) == "browser", item.nodeid


SAMPLE_CONFTEST = """
import pytest

@pytest.fixture
def db(): pass

@pytest.fixture
def transactional_db(): pass

@pytest.fixture
def live_server(): pass

@pytest.fixture
def browser(): pass

@pytest.fixture
def cast(db): pass  # a fixture that needs the database
"""

SAMPLE_TESTS = """
import pytest

def test_plain(): pass
def test_uses_db(db): pass
def test_uses_a_fixture_that_uses_db(cast): pass
def test_uses_transactional_db(transactional_db): pass
def test_uses_the_live_server(live_server): pass

@pytest.mark.django_db
def test_marked_django_db(): pass

def test_opens_chromium(browser): pass

@pytest.mark.e2e
def test_drives_the_service(): pass

@pytest.mark.e2e
def test_drives_the_dashboard_of_the_service(browser): pass
"""

SAMPLE_OWN_SERVER = """
from tests.pg_servers import server_start

def test_starts_a_replica(): assert server_start
"""

EXPECTED = {
    "pure": ["test_plain"],
    "database": [
        "test_uses_db",
        "test_uses_a_fixture_that_uses_db",
        "test_uses_transactional_db",
        "test_uses_the_live_server",
        "test_marked_django_db",
        "test_starts_a_replica",
    ],
    "browser": ["test_opens_chromium"],
    "e2e": ["test_drives_the_service", "test_drives_the_dashboard_of_the_service"],
}


def _collected(pytester: pytest.Pytester, *args: str) -> tuple[int, list[str]]:
    result = pytester.runpytest("--disable-plugin-autoload", "-p", "tests.suite_plugin", "--co", "-q", *args)
    names = [line.split("::")[-1] for line in result.outlines if "::" in line]
    return result.ret, names


@pytest.mark.parametrize("tier", TIERS)
def test_a_test_is_sorted_by_the_fixtures_and_marks_it_uses(pytester: pytest.Pytester, tier: str) -> None:
    pytester.makeconftest(SAMPLE_CONFTEST)
    pytester.makepyfile(test_sample=SAMPLE_TESTS, test_own_server=SAMPLE_OWN_SERVER)
    code, names = _collected(pytester, "-m", tier)
    assert code == 0
    assert sorted(names) == sorted(EXPECTED[tier])


def test_a_test_marked_with_a_tier_it_does_not_belong_to_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SAMPLE_CONFTEST)
    pytester.makepyfile(test_mislabelled="import pytest\n\n@pytest.mark.pure\ndef test_queries(db): pass\n")
    result = pytester.runpytest("--disable-plugin-autoload", "-p", "tests.suite_plugin", "--co", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_mislabelled.py::test_queries: database, pure" in result.stderr.str()


SAMPLE_PLAIN = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_plain(n): pass
"""

SAMPLE_END_TO_END = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_drives_the_service(n): pass
"""


def test_under_xdist_the_end_to_end_tests_all_run_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They share one running service and run in an order (tests/e2e/conftest.py): ``./scripts/test.sh``'s
    ``--dist loadgroup`` makes them one work unit (tests/suite_plugin.py)."""
    monkeypatch.setenv("PYTHONPATH", str(TESTS.parent))
    pytester.mkdir("tests")
    pytester.mkdir("tests/e2e")
    pytester.makepyfile(**{"tests/test_plain": SAMPLE_PLAIN, "tests/e2e/test_service": SAMPLE_END_TO_END})
    result = pytester.runpytest_subprocess(
        "--disable-plugin-autoload", "-p", "xdist", "-p", "tests.suite_plugin", "-n", "2", "--dist", "loadgroup", "-v"
    )
    assert result.ret == 0, result.stdout.str()
    ran = [line for line in result.outlines if "PASSED" in line]
    assert len(ran) == 12, result.stdout.str()
    workers = {line.split("]")[0] for line in ran if "test_drives_the_service" in line}
    assert len(workers) == 1, result.stdout.str()
    assert len({line.split("]")[0] for line in ran}) == 2  # the other worker ran the rest


SAMPLE_SHARED_FIXTURE = """
import pytest

@pytest.fixture(scope="module")
def server(): return object()

@pytest.mark.parametrize("n", range(6))
def test_uses_the_module_server(server, n): pass
"""


def test_under_xdist_a_module_with_a_module_scoped_fixture_runs_on_one_worker_and_sets_it_up_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS.parent))
    pytester.mkdir("tests")
    pytester.makepyfile(**{"tests/test_plain": SAMPLE_PLAIN, "tests/test_shared": SAMPLE_SHARED_FIXTURE})
    result = pytester.runpytest_subprocess(
        "--disable-plugin-autoload", "-p", "xdist", "-p", "tests.suite_plugin", "-n", "2", "--dist", "loadgroup", "-v"
    )
    assert result.ret == 0, result.stdout.str()
    ran = [line for line in result.outlines if "PASSED" in line]
    assert len(ran) == 12, result.stdout.str()
    assert len({line.split("]")[0] for line in ran if "test_uses_the_module_server" in line}) == 1
    assert len({line.split("]")[0] for line in ran}) == 2  # the other worker ran the rest
