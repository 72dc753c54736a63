"""Institutional promotion in a real browser (docs/consolidation.md#institutional-promotion): a lesson
two projects of a team agree on waits in the review queue with its source projects and confidence; one
click on "Promote" swaps the card over htmx and the memory serves the team."""

from __future__ import annotations

import pytest

from consolidation.models import ReviewItem
from consolidation.promotion.services import promotions_propose
from memories.models import Memory
from tests.consolidation.promotion_setup import lesson, teams_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def proposal(cast) -> ReviewItem:
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    teams_setup(cast)
    alice = cast.principal(cast.alice)
    lesson(alice, "web-app", 1, usage_count=3)
    lesson(alice, "api", 2)
    promotions_propose(principal=alice)
    return ReviewItem.objects.select_related("first").get(kind=ReviewItem.KIND_PROMOTION)


def test_a_moderator_promotes_a_lesson_to_its_team_in_one_click(proposal, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    page.goto(f"{base}/consolidation/reviews/")
    card = page.locator(f"#review-{proposal.pk}")
    text = card.inner_text()
    assert "Proposed for team platform" in text and f"confidence {proposal.first.confidence:.2f}" in text
    assert (
        "api" in card.locator("table.sources").inner_text() and "web-app" in card.locator("table.sources").inner_text()
    )
    shoot("promotion-proposal")

    card.locator("button[value=accept]").click()
    page.locator(f"#review-{proposal.pk} [role=status]").wait_for()
    assert "Promoted" in page.locator(f"#review-{proposal.pk}").inner_text()
    assert page.url.startswith(f"{base}/consolidation/reviews/")  # swapped in place, no navigation

    page.goto(f"{base}/memories/{proposal.first_id}/")
    assert proposal.first.title in page.content()
    assert Memory.objects.get(pk=proposal.first_id).state == Memory.STATE_ACTIVE
