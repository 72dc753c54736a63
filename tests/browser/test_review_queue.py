"""The review queue in a real browser (docs/consolidation.md#the-review-queue-and-disputes): one click on
"They contradict" swaps the card for the decision over htmx (CSRF header included) and the pair shows up
with the disputes."""

from __future__ import annotations

import pytest

from consolidation.models import ReviewItem
from tests.consolidation.vectors import remember, spoke

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pending(cast, agent) -> ReviewItem:
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    first = remember(agent, "Payment webhook retries", spoke(0, 1, 0.97), content="Always retry failed webhooks.")
    second = remember(agent, "Retrying payment webhooks", spoke(0, 2, 0.97), content="Never retry failed webhooks.")
    return ReviewItem.objects.create(
        organization=cast.org_a, project=cast.project_a, first=first, second=second, similarity=0.97,
        cues=["negation: one negates what the other states: retry"], reason="no LLM is configured to judge them",
    )  # fmt: skip


def test_a_moderator_marks_a_pair_as_contradicting_in_one_click(pending, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    page.click("nav.mainnav >> text=Quality")
    page.wait_for_url(f"{base}/consolidation/quality/")
    assert page.locator("svg.chart").count() == 6
    shoot("quality-report")
    page.click("text=waiting for review")
    card = page.locator(f"#review-{pending.pk}")
    assert "negation" in card.inner_text() and "Never retry failed webhooks." in card.inner_text()
    shoot("review-queue")

    card.locator("button[value=contradicts]").click()
    page.locator(f"#review-{pending.pk} [role=status]").wait_for()
    assert "listed with the disputes" in page.locator(f"#review-{pending.pk}").inner_text()
    assert page.url.startswith(f"{base}/consolidation/reviews/")  # swapped in place, no navigation

    page.goto(f"{base}/disputed/")
    assert "Payment webhook retries" in page.content() and "Retrying payment webhooks" in page.content()
