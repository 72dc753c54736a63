"""The API tokens page in a real browser at a laptop's width: the project restriction says what it means
(all projects when none is ticked), and once tokens with long labels exist, each one's Revoke button is
on the screen."""

from __future__ import annotations

import pytest

from accounts.tokens.services import token_create
from tests.factories import ProjectFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_LABEL = "ci-runner-" + "x" * 90  # the longest label the form takes, nothing to break it at


@pytest.fixture
def tokens(cast):
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    ProjectFactory(organization=cast.org_a, slug="billing-service", name="Billing service")
    token_create(organization=cast.org_a, label=LONG_LABEL, projects=[cast.project_a])
    token_create(organization=cast.org_a, label="laptop")


def test_the_project_picker_says_all_projects_until_one_is_ticked(tokens, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/settings/tokens/")

    # every token's Revoke button is inside the 1,280 px window, the page no wider than it
    revokes = page.get_by_role("button", name="Revoke")
    assert revokes.count() == 2
    for i in range(2):
        box = revokes.nth(i).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280

    picker = page.get_by_role("group", name="Projects")
    summary = picker.locator("#token-projects-summary")
    assert summary.inner_text().startswith("All projects")
    assert "0 selected" not in page.locator("body").inner_text()
    picker.get_by_role("checkbox", name="Web-App web-app").check()
    assert summary.inner_text() == "Only the ticked projects: web-app."
    picker.get_by_role("checkbox", name="Web-App web-app").uncheck()
    assert summary.inner_text().startswith("All projects")
    picker.get_by_role("checkbox", name="Billing service billing-service").check()
    shoot("tokens-picker")

    page.fill("#token-label", "deploy bot")
    page.get_by_role("button", name="Create token").click()
    page.wait_for_selector("#raw-token")
    # read on the page, not through the ORM (a query under Playwright's loop leaves a connection behind)
    assert "record into billing-service without naming it" in page.locator("#new-token").inner_text()
    row = page.locator("tr", has_text="deploy bot")
    assert row.locator("td").nth(3).inner_text() == "billing-service"
