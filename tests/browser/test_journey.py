"""A new user's whole journey in a real browser: sign up → project → token → an agent records
memories over the API → find one by search → detail → dry-run then apply consolidation → lineage."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from django_q.conf import Conf

from tests.e2e.llm_stub import batch_reply, synthesis_batch_reply
from tests.fakes import ScriptedLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-unusual-passphrase"
TIMEOUT_MEMORIES = [
    (
        "Wrap database calls with a timeout",
        "Always wrap database queries in Go with context.WithTimeout so slow queries cannot hang",
    ),
    (
        "Wrap database calls with timeouts",
        "Always wrap database queries in Go with context.WithTimeout so slow queries never hang",
    ),
    (
        "Wrap each database call with a timeout",
        "Always wrap database queries in Go with context.WithTimeout so a slow query cannot hang",
    ),
]


def _consolidation_llm() -> ScriptedLLM:
    def reply(system: str, prompt: str) -> str:
        if prompt.startswith("You are consolidating"):
            return (
                "TITLE: Database Timeout Management in Go\n"
                "CONTENT: Wrap every database call in context.WithTimeout and handle DeadlineExceeded.\n"
                "TAGS: go, database, timeout\nOUTCOME: success\n"
                "SOURCE_ATTRIBUTION: Synthesized from 3 source memories about database timeouts"
            )
        if "Pairs (OLDER → NEWER):" in prompt:  # the batched judge: every pair the same advice
            return batch_reply(prompt)
        if prompt.startswith("Consolidate each of these "):  # the batched synthesis, with its summary
            return synthesis_batch_reply(
                prompt,
                title="Database Timeout Management in Go",
                content="Wrap every database call in context.WithTimeout and handle DeadlineExceeded.",
            )
        if "supersedes" in system:
            return '{"supersedes": false, "confidence": "low", "reason": null}'
        return '{"reasoning": "same advice", "contradicts": false, "confidence": 0.1, "explanation": ""}'

    return ScriptedLLM([reply] * 50)


def _api(base: str, token: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_new_user_connects_an_agent_and_watches_its_memories_consolidate(
    live_server, page, shoot, monkeypatch, settings
):
    settings.DEFAULT_PLAN = "free"  # the hosted service's journey: sign up on Free, upgrade to Pro
    monkeypatch.setattr(Conf, "SYNC", True)  # run queued work in-process: no worker in this test
    monkeypatch.setattr("consolidation.run_state.llm_from_settings", _consolidation_llm)
    base = live_server.url

    # sign up: a new user gets their own org and lands on the overview
    page.goto(f"{base}/accounts/signup/")
    shoot("signup")
    page.fill("input[name=email]", "dana@newco.test")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert "dana@newco.test" in page.content()
    shoot("overview-empty")

    # the owner upgrades to Pro (manual consolidation), then creates a project and a token
    page.goto(f"{base}/settings/plan/")
    page.select_option("#plan-select", "pro")
    page.get_by_role("button", name="Change plan").click()
    page.wait_for_selector("text=Plan changed from Free to Pro")
    page.goto(f"{base}/settings/projects/")
    page.fill("#project-name", "Web App")
    page.fill("#project-slug", "web-app")
    page.get_by_role("button", name="Create project").click()
    assert page.locator("text=web-app").first.is_visible()
    # tied to its repository, so agents in any clone of it reach it (docs/code-memory.md#projects-by-repository)
    row = page.locator("tr", has_text="web-app")
    row.locator("input[name=repository]").fill("git@github.com:acme/web-app.git")
    row.get_by_role("button", name="Save").click()
    page.wait_for_selector("text=Project web-app is tied to github.com/acme/web-app.")
    page.goto(f"{base}/settings/tokens/")
    page.fill("#token-label", "laptop")
    page.locator("#token-projects input[data-picker-name=web-app]").check()
    page.get_by_role("button", name="Create token").click()
    token = page.input_value("#raw-token")
    assert token.startswith("rb_")
    assert f"Bearer {token}" in page.content()  # the ready-to-paste claude mcp add / .mcp.json snippets
    shoot("settings-tokens")

    # an agent records memories through the API with that token
    ids = [
        _api(
            base,
            token,
            "/api/v1/memories",
            {
                "title": title,
                "description": "When Go services call the database",
                "content": content,
                "outcome": "success",
                "tags": ["go", "database"],
            },
        )["id"]
        for title, content in TIMEOUT_MEMORIES
    ]

    # find it by search in the dashboard, open its detail
    page.goto(f"{base}/memories/")
    page.fill("#f-q", "database timeout")
    page.press("#f-q", "Enter")
    page.wait_for_selector(f"a[href='/memories/{ids[0]}/']")
    shoot("memories-search")
    page.click(f"a[href='/memories/{ids[0]}/']")
    page.wait_for_url(f"{base}/memories/{ids[0]}/")
    assert "Wrap database calls with a timeout" in page.content()
    shoot("memory-detail")

    # dry-run: the preview lists the cluster and changes nothing; then apply
    page.goto(f"{base}/consolidation/")
    page.select_option("#run-project", "web-app")
    page.get_by_role("button", name="Preview (dry run)").click()
    page.get_by_role("button", name="Apply").wait_for()
    shoot("consolidation-preview")
    # the dry run is listed with the runs at once (swapped in with the preview), not "No consolidation runs yet"
    history = page.locator("#history")
    assert "No consolidation runs yet" not in history.inner_text()
    assert history.locator(".badge", has_text="dry run").count() == 1
    for memory_id in ids:
        assert _state(base, token, memory_id) == "active"
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r".*/consolidation/runs/run_[0-9a-z]+/"))
    page.wait_for_selector("text=completed", timeout=30_000)
    shoot("consolidation-run")

    # the sources are archived into one consolidated memory; walk the lineage both ways
    assert [_state(base, token, memory_id) for memory_id in ids] == ["archived"] * 3
    page.goto(f"{base}/memories/{ids[0]}/")
    assert "consolidated" in page.content().lower()
    page.click("text=Database Timeout Management in Go")
    for memory_id in ids:
        assert page.locator(f"a[href='/memories/{memory_id}/']").count() >= 1
    shoot("consolidated-lineage")


def _state(base: str, token: str, memory_id: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/v1/memories/{memory_id}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["state"]
