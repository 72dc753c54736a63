"""A write suspension in a real browser (docs/security/memory-poisoning.md#suspension-after-flagged-writes):
the owner sees the banner on the overview, follows its link to Settings → API tokens, finds the token
marked, lifts the suspension after the confirmation, and the banner is gone; declining the
confirmation lifts nothing."""

from __future__ import annotations

import pytest

from accounts.access import principal_for_token
from accounts.tokens.services import token_create
from accounts.write_limits.services import flagged_write_note

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def leaked(cast):
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    token, _ = token_create(organization=cast.org_a, label="leaked laptop")
    for _ in range(3):
        flagged_write_note(principal_for_token(token))
    return token


def test_the_owner_follows_the_banner_and_lifts_the_suspension(leaked, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    banner = page.locator("[data-banner=suspension]")
    assert banner.count() == 1
    assert f"{leaked.prefix}… (leaked laptop)" in banner.inner_text()
    shoot("write-suspension-banner")
    banner.get_by_role("link", name="Settings → API tokens").click()
    page.wait_for_url(f"{base}/settings/tokens/")
    row = page.locator("tr", has_text="leaked laptop")
    assert "writes suspended" in row.inner_text()

    page.once("dialog", lambda dialog: dialog.dismiss())  # "Let this token write again?" — no
    row.get_by_role("button", name="Lift the write suspension of leaked laptop").click()
    assert page.url == f"{base}/settings/tokens/"
    assert "writes suspended" in page.locator("tr", has_text="leaked laptop").inner_text()

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        row.get_by_role("button", name="Lift the write suspension of leaked laptop").click()
    assert "may write again" in page.locator(".messages").inner_text()
    assert "active" in page.locator("tr", has_text="leaked laptop").inner_text()
    assert page.locator("[data-banner=suspension]").count() == 0
    shoot("write-suspension-lifted")
