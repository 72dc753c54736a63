"""The dashboard under its Content-Security-Policy in a real browser: every main page carries the
header, Chromium reports no violation on any of them (no inline script, handler or style is left,
htmx injects no <style>), and what the pages do with JavaScript still works — htmx filtering,
swaps and indicators, the org switcher, copy and confirm buttons (static/js/app.js)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Membership
from tests.factories import AgentSessionFactory, MembershipFactory, memory_recorder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

record = memory_recorder(tags=["testing"])
PAGES = [
    "/",
    "/memories/",
    "/disputed/",
    "/consolidation/",
    "/consolidation/quality/",
    "/consolidation/reviews/",
    "/sessions/",
    "/settings/",
    "/settings/teams/",
    "/settings/projects/",
    "/settings/tokens/",
    "/settings/connected-apps/",
    "/settings/trust/",
    "/settings/usage/",
    "/settings/plan/",
    "/settings/mfa/",
    "/system/",
]
# records every violation the page reports (an init script runs before the page's own, outside its CSP)
COLLECT_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sample || ""));
});
"""


@pytest.fixture
def dashboard(cast, agent) -> dict[str, Any]:
    """Data for every page, made before the browser opens (ORM work under Playwright's loop leaves a
    connection behind); alice also belongs to globex, so that the org switcher shows."""
    MembershipFactory(user=cast.alice, organization=cast.org_b, role=Membership.ROLE_VIEWER)
    memories = [
        record(agent, title="Pin flaky test seeds", content="Seed the random generator in tests so failures repeat."),
        record(agent, title="Stop at the first failure", content="Run pytest -x while fixing one regression."),
    ]
    session = AgentSessionFactory(project=cast.project_a)
    return {"memories": memories, "session": session}


@pytest.fixture
def watched(page) -> dict[str, list[str]]:
    """The CSP complaints Chromium writes to the console, besides the violation events."""
    seen: dict[str, list[str]] = {"console": []}
    page.add_init_script(COLLECT_VIOLATIONS)
    page.on(
        "console",
        lambda message: seen["console"].append(message.text) if "Content Security Policy" in message.text else None,
    )
    page.on("dialog", lambda dialog: dialog.accept())  # data-confirm questions
    return seen


def _sign_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def _violations(page, watched) -> list[str]:
    return [*page.evaluate("window.cspViolations"), *watched["console"]]


def test_every_dashboard_page_has_the_policy_and_breaks_none_of_it(dashboard, live_server, page, watched):
    base = live_server.url
    login = page.goto(f"{base}/accounts/login/")
    assert "script-src 'self'" in login.headers["content-security-policy"]
    assert page.evaluate("window.cspViolations") == []
    _sign_in(page, base)
    pages = [*PAGES, f"/memories/{dashboard['memories'][0].id}/", f"/sessions/{dashboard['session'].external_id}/"]
    for path in pages:
        response = page.goto(f"{base}{path}")
        assert response.status == 200, path
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, path
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, path
        page.wait_for_load_state("networkidle")
        assert _violations(page, watched) == [], path
        # htmx was told not to inject its indicator <style> (app.css styles .htmx-indicator)
        assert page.evaluate("document.querySelectorAll('style').length") == 0, path
        assert page.evaluate("typeof htmx") == "object", path  # the scripts did load


def test_htmx_and_the_page_scripts_still_work_under_the_policy(dashboard, live_server, page, watched):
    base = live_server.url
    _sign_in(page, base)
    first = dashboard["memories"][0]

    # htmx filtering: the results swap in place and the URL is pushed
    page.goto(f"{base}/memories/")
    page.fill("#f-q", "flaky seeds")
    page.press("#f-q", "Enter")
    page.wait_for_url("**/memories/?q=flaky*")
    page.wait_for_selector(f"a[href='/memories/{first.id}/']")
    assert page.locator("text=Stop at the first failure").count() == 0

    # an htmx POST swap with the CSRF header: archive, then restore, in place
    page.goto(f"{base}/memories/{first.id}/")
    page.get_by_role("button", name="Archive").click()
    page.get_by_role("button", name="Restore").wait_for()
    page.get_by_role("button", name="Restore").click()
    page.get_by_role("button", name="Archive").wait_for()
    assert page.url == f"{base}/memories/{first.id}/"

    # a token shown once: selected on focus, a copy button, and revoking asks first (accepted)
    page.goto(f"{base}/settings/tokens/")
    page.fill("#token-label", "laptop")
    page.get_by_role("button", name="Create token").click()
    page.focus("#raw-token")
    assert page.evaluate("document.activeElement.selectionEnd - document.activeElement.selectionStart") > 10
    assert page.locator("button[data-copy]").first.is_visible()
    page.locator("form[data-confirm] button[type=submit]").first.click()
    page.wait_for_selector("text=revoked")

    # <select data-autosubmit>: the org switcher submits on change
    page.goto(f"{base}/")
    page.select_option("#org-select", "globex")
    page.wait_for_function("document.querySelector('#org-select').value === 'globex'")
    page.wait_for_load_state("networkidle")
    assert page.locator("#org-select option:checked").inner_text() == "Globex"

    assert _violations(page, watched) == []
