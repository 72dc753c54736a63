"""The Code page in a real browser (docs/code-memory.md#browse-by-code): a viewer opens the Code tab,
expands directories (their children fetched over htmx when opened, a large one a hundred at a time with
"Show more") and clicks a file to read its memories beside the tree, without leaving the page."""

from __future__ import annotations

import pytest

from memories.models_code import MemoryAnchor
from tests.factories import memory_recorder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

record = memory_recorder(description="When changing the HTTP client", content="Set a timeout on every call.")


@pytest.fixture
def anchored(cast, agent):
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    send = record(agent, title="Client.send retries on 503")
    stale = record(agent, title="Retry budget lives on the pool")
    many = record(agent, title="Generated modules share one lesson")

    def anchor(memory, path, **fields):
        MemoryAnchor.objects.create(organization=cast.org_a, memory=memory, path=path, **fields)

    anchor(send, "src/http/client.py", symbol="Client.send", line_start=40, line_end=72, commit="0123456789abcdef")
    anchor(stale, "src/http/client.py", symbol="Pool.retry", state=MemoryAnchor.STATE_CODE_CHANGED)
    for n in range(105):  # more than one page of a directory's children
        anchor(many, f"gen/m{n:03}.py")
    return send


def test_a_viewer_expands_the_tree_and_reads_a_files_memories_in_place(anchored, live_server, page, shoot):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "bob@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    page.click("nav.mainnav >> text=Code")
    page.wait_for_url(f"{base}/code/")
    tree = page.locator("nav.code-tree-box")
    assert tree.locator(".code-name", has_text="http").count() == 0  # nothing under src/ until it is opened
    src = tree.locator("li.code-dir", has=page.locator("summary", has_text="src/")).first
    assert "1 stale" in src.locator("summary").inner_text()
    src.locator("summary").first.click()
    http = src.locator("li.code-dir", has=page.locator("summary", has_text="http/")).first
    http.wait_for()
    http.locator("summary").first.click()
    client_py = http.locator("a.code-name", has_text="client.py")
    client_py.wait_for()
    client_py.click()
    panel = page.locator("#code-file")
    panel.locator("table.code-anchors").wait_for()
    text = panel.inner_text()
    assert "Client.send retries on 503" in text and "Client.send" in text and "40–72" in text
    assert "0123456789" in text and "Retry budget lives on the pool" in text and "Code changed" in text
    assert page.url == f"{base}/code/"  # swapped in place
    shoot("code-page-file")

    gen = tree.locator("li.code-dir", has=page.locator("summary", has_text="gen/")).first
    gen.locator("summary").first.click()
    gen.locator("a.code-name", has_text="m099.py").wait_for()
    assert gen.locator("li.code-file").count() == 100
    gen.locator("li.code-more a").click()
    gen.locator("a.code-name", has_text="m104.py").wait_for()
    assert gen.locator("li.code-file").count() == 105 and gen.locator("li.code-more").count() == 0

    panel_link = page.locator("#code-file").get_by_role("link", name="Client.send retries on 503")
    panel_link.click()
    page.wait_for_url(f"{base}/memories/{anchored.id}/")
