"""A memory's content in a real browser: the Markdown an agent wrote renders (code, lists, links), and
markup hidden in it — a script, an event handler, a javascript: link — neither runs nor shows as markup,
on the memory's page, the disputes page and the review queue."""

from __future__ import annotations

import pytest

from consolidation.models import ReviewItem
from tests.factories import MemoryLinkFactory, memory_recorder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

record = memory_recorder(description="When a webhook delivery fails")
HOSTILE = (
    "Set `retry_limit=3` and read [the guide](https://docs.example.com/webhooks).\n\n"
    "- back off\n- give up after three\n\n"
    "<script>window.pwned = 'script'</script>\n\n"
    '<img src="/nowhere.png" onerror="window.pwned = \'onerror\'">\n\n'
    "[click me](javascript:window.pwned='link')"
)


@pytest.fixture
def hostile(cast, agent):
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    first = record(agent, title="Retry failed webhooks", content=HOSTILE)
    second = record(agent, title="Never retry webhooks", content="Never retry a failed webhook.")
    MemoryLinkFactory(source=first, target=second, kind="contradicts", weight=0.9, reason="retry or not")
    ReviewItem.objects.create(
        organization=cast.org_a, project=cast.project_a, first=first, second=second, similarity=0.95,
        cues=["negation"], reason="no LLM is configured to judge them",
    )  # fmt: skip
    return first


def test_memory_content_renders_as_markdown_and_its_markup_never_runs(hostile, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    for path in (f"/memories/{hostile.id}/", "/disputed/", f"/consolidation/reviews/?project={hostile.project.slug}"):
        page.goto(f"{base}{path}")
        page.wait_for_load_state("networkidle")
        content = page.locator(".content", has_text="retry_limit=3").first
        # the Markdown renders: backticks become code, a list a list, a link a link that says where it goes
        assert content.locator("code", has_text="retry_limit=3").count() == 1, path
        assert content.locator("li").all_inner_texts() == ["back off", "give up after three"], path
        link = content.get_by_role("link", name="the guide")
        assert link.get_attribute("href") == "https://docs.example.com/webhooks", path
        assert "noopener" in (link.get_attribute("rel") or ""), path
        assert "`" not in content.inner_text(), path
        # the hostile parts are text: no script, image or javascript: link, and nothing ran
        assert content.locator("script, img, [onerror]").count() == 0, path
        assert content.locator("a[href^='javascript']").count() == 0, path
        assert "<script>" in content.inner_text(), path  # shown, as the agent wrote it
        content.get_by_text("click me").click()
        assert page.evaluate("window.pwned") is None, path
    shoot("memory-content-markdown")
