"""A new user in Chromium against the live server (DEBUG off, plain http as run.sh serves it): sign up,
land on the dashboard with their org, create a token, and the first snippet's token works for an agent's
first write without any further setup (docs/tenancy.md#who-owns-what: a new organization has one project,
``default``, so the snippet needs no project)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio

from tests.e2e.harness import Service, call, mcp_client, screenshot, unique

PASSWORD = "a-long-unusual-passphrase-e2e"


def test_a_new_user_signs_up_sets_up_the_org_and_connects_an_agent(service: Service, page: Any) -> None:
    base = service.url
    email = f"{unique('dana').lower()}@newco.test"
    page.goto(f"{base}/accounts/signup/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("button[type=submit]")
    try:
        page.wait_for_url(f"{base}/")
    finally:
        screenshot(page, "signup-landing")
    assert email in page.content()
    assert page.locator("h1", has_text="Overview").is_visible()
    assert email in page.inner_text("#org-select")  # the user's own new org, named after them
    # the overview's own call to action, then a token for the whole org: the first snippet a user copies
    page.get_by_role("link", name="Connect an agent").click()
    page.wait_for_url(f"{base}/settings/tokens/")
    page.fill("#token-label", "laptop")
    page.get_by_role("button", name="Create token").click()
    token = page.input_value("#raw-token")
    screenshot(page, "signup-token")
    assert token.startswith("rb_")
    snippet = page.inner_text("#snippet-claude")
    assert f"{base}/mcp" in snippet and f"Bearer {token}" in snippet, snippet

    async def agent_records() -> dict[str, Any]:
        async with mcp_client(service, token, "legacy") as client:
            return await call(
                client,
                "memory_record",
                {
                    "title": "First memory from the dashboard snippet",
                    "description": "Checks the copied token works",
                    "content": "Copied the snippet, recorded a memory.",
                    "outcome": "success",
                    "tags": [],
                },
            )

    # Playwright's sync API keeps an event loop running on this thread: the agent gets its own
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(anyio.run, agent_records).result(timeout=120)["id"]
