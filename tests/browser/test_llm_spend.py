"""The LLM spend page in a real Chromium: the owner sets a daily cap with the form and reads it back
in the caps table with the spend, and the budget banner (the day's alert already sent) shows on every
page once that cap is in force. A screenshot of the page goes to artifacts/screenshots/."""

from __future__ import annotations

from django.utils import timezone

from reasoningbank.models import LlmBudgetPeriod, LlmCall


def test_the_owner_sets_a_daily_cap_and_sees_it_with_the_spend_and_the_alert_banner(cast, live_server, page, shoot):
    # made before the browser opens (ORM work under Playwright's loop leaves a connection behind): the
    # day's spend, and its counter as the call that crossed 80 % of a cap would have left it
    LlmCall.objects.create(
        organization=cast.org_a,
        provider="openai",
        model="gpt-4o-mini",
        purpose="distill",
        input_tokens=40_000,
        output_tokens=5_000,
    )
    LlmBudgetPeriod.objects.create(
        organization=cast.org_a,
        period="day",
        start=timezone.now().date(),
        used_tokens=45_000,
        alerted_at=timezone.now(),
    )
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert page.locator("[data-banner=budget]").count() == 0  # no daily cap yet

    page.goto(f"{base}/settings/usage/")
    page.fill("input[name=daily_tokens]", "50,000")
    page.fill("input[name=alert_percent]", "80")
    page.get_by_role("button", name="Save budget").click()
    page.wait_for_url(f"{base}/settings/usage/")
    daily = page.locator("tr[data-cap=daily]").inner_text()
    assert "50,000" in daily and "45,000" in daily
    assert page.locator("[data-total=input_tokens]").inner_text() == "40,000"
    shoot("llm-spend")

    page.goto(f"{base}/")
    assert (
        "90% of the organization's daily LLM cap of 50,000 tokens is used"
        in page.locator("[data-banner=budget]").inner_text()
    )
