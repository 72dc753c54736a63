"""End-to-end suite: one service for the whole directory, started by ``scripts/run.sh`` exactly as a
user starts it, driven only from outside. Every test here is marked ``e2e`` (``-m "not e2e"`` skips it).

The modules run in the order of ``_ORDER`` (supervision, which kills the service's processes, and then
stop-and-restart last: it replaces the running service).
The fixtures are package-scoped so that the service is gone before the rest of the suite goes on.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Service, completed_text, token_from
from tests.e2e.llm_stub import LLMStub
from tests.hook_state import state_dir_for_test

_HERE = Path(__file__).resolve().parent
# one INFO line per HTTP request would bury a failure's own messages
logging.getLogger("httpx2").setLevel(logging.WARNING)
_ORDER = [
    "test_service.py",
    "test_readme_commands.py",
    "test_readme_quickstart.py",
    "test_mcp_agent.py",
    "test_org_wide_token.py",
    "test_session_start_hook.py",
    "test_claude_code_plugin.py",
    "test_agent_hooks.py",
    "test_claude_code_resume.py",
    "test_memory_poisoning.py",
    "test_code_report_hook.py",
    "test_schedule.py",
    "test_dashboard_signup.py",
    "test_oauth_connect.py",
    "test_schema.py",
    "test_sdks.py",
    "test_load.py",
    "test_load_agents.py",
    "test_worker_fairness.py",
    "test_supervision.py",
    "test_stop_and_restart.py",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [i for i, item in enumerate(items) if Path(str(item.path)).parent == _HERE]
    if not ours:
        return
    for i in ours:
        items[i].add_marker(pytest.mark.e2e)
    rank = {name: n for n, name in enumerate(_ORDER)}
    # a module not listed runs before the ones that stop the shared service (supervision, restarts)
    unlisted = rank["test_supervision.py"] - 0.5
    ordered = sorted((items[i] for i in ours), key=lambda item: rank.get(Path(str(item.path)).name, unlisted))
    for i, item in zip(ours, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="package")
def llm_stub() -> Iterator[LLMStub]:
    stub = LLMStub()
    stub.start()
    yield stub
    stub.stop()


@pytest.fixture(scope="package")
def service(llm_stub: LLMStub) -> Iterator[Service]:
    """The running product. Torn down by force whatever happened (the stop itself is a test)."""
    data_dir = Path(tempfile.mkdtemp(prefix="rb-e2e-"))
    svc = Service(data_dir=data_dir, llm_base_url=llm_stub.base_url)
    try:
        svc.start()
        yield svc
    finally:
        svc.kill_everything()
        svc.keep_log()
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Setup:
    """What the commands run.sh prints produced (org acme, project web-app, two tokens)."""

    results: dict[str, str]  # command -> its output, for the failure messages
    failures: list[str]
    project_token: str = ""
    org_token: str = ""


@pytest.fixture(scope="package")
def readme_setup(service: Service) -> Setup:
    """The commands run.sh's banner prints, as written, run once in a second process beside run.sh (the
    README's own quickstart is run by test_readme_quickstart.py, in an organization of its own)."""
    commands = {
        "create_org": ["create_org", "acme", "--plan", "pro", "--owner-email", "you@example.com"],
        "create_project": ["create_project", "acme", "web-app"],
        "create_token": ["create_token", "acme", "--label", "laptop", "--project", "web-app"],
        # the dashboard's first snippet: a token for the whole org, no project restriction
        "create_token (org-wide)": ["create_token", "acme", "--label", "everything"],
    }
    setup = Setup(results={}, failures=[])
    for name, args in commands.items():
        result = service.manage(*args)
        setup.results[name] = completed_text(result)
        if result.returncode != 0:
            setup.failures.append(f"manage.py {' '.join(args)}\n{completed_text(result)}")
    if not setup.failures:
        setup.project_token = token_from(setup.results["create_token"])
        setup.org_token = token_from(setup.results["create_token (org-wide)"])
    return setup


@pytest.fixture(scope="package")
def acme(readme_setup: Setup) -> Setup:
    """Tokens from those commands; tests that need them error when the commands failed."""
    if readme_setup.failures:
        failed = "\n".join(readme_setup.failures)
        raise AssertionError(f"the commands run.sh prints failed, so there is no token:\n{failed}")
    return readme_setup


@pytest.fixture
def hook_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The state directory of the hooks under integrations/ for one test (tests/hook_state.py)."""
    yield from state_dir_for_test(tmp_path, monkeypatch)


def manage_ok(service: Service, *args: str) -> str:
    result = service.manage(*args)
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{completed_text(result)}"
    return result.stdout


@pytest.fixture
def page() -> Iterator[Any]:
    """A Chromium page (Debian's chromium, as the browser tests use) for the tests that drive the live
    service's dashboard: signup, OAuth login and consent."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"Chromium not found at {CHROMIUM}; run scripts/ensure-chromium.sh")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()
