"""POST /api/v1/code/changes and the MCP tool code_changes_report (docs/code-memory.md#staleness): one
contract on both transports, bad input a 400 naming the field, within the token's organization only; and
what a flag does to the memory — ranked lower in search with the factor in its explanation, the flag in
the results, and "the code changed since <commit> — verify" in every injected block."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from memories.models import MemoryAnchor
from tests.factories import MemoryFactory
from tests.mcp_harness import dump, in_thread, mcp_client

CHANGES = "/api/v1/code/changes"
SEARCH = "/api/v1/memories/search"
CONTEXT = "/api/v1/memories/context"
ANCHORED = "3f786850e387550fdab836ed7e6dc881de23001b"
CHANGE = "89e6c98d92887913cadf06b2adb97f26cde4849b"
REMOTE = "https://github.com/acme/api.git"


def body(**overrides: Any) -> dict[str, Any]:
    return {
        "repository": REMOTE,
        "commit": CHANGE,
        "committed_at": "2026-11-30T10:00:00Z",
        "files": [
            {
                "status": "modified",
                "path": "app/http.py",
                "hunks": [{"start": 12, "lines": 3}],
                "symbols": ["Client.get"],
            },
        ],
        **overrides,
    }


def anchored(principal: Any, title: str, content: str, **place: Any) -> tuple[str, MemoryAnchor]:
    memory = MemoryFactory(principal=principal, title=title, content=content)
    anchor = MemoryAnchor.objects.create(
        organization=principal.organization,
        memory=memory,
        repository="github.com/acme/api",
        path="app/http.py",
        commit=ANCHORED,
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
        **place,
    )
    return memory.id, anchor


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a, projects=[cast.project_a])


def test_a_report_flags_the_anchor_whose_symbol_changed_and_says_what_it_did(alice, agent):
    memory_id, anchor = anchored(agent, "Client.get retries twice", "Set timeouts on the client", symbol="Client.get")

    response = alice.post(CHANGES, body(), format="json")

    assert response.status_code == 200, response.json()
    assert response.json() == {
        "repository": "github.com/acme/api",
        "commit": CHANGE,
        "code_changed": [memory_id],
        "deleted": [],
        "moved": [],
        "already_reported": False,
        "message": f"Commit {CHANGE[:12]} of github.com/acme/api: 1 memories flagged code_changed, 0 with a deleted "
        "file, 0 followed a rename",
    }
    anchor.refresh_from_db()
    assert (anchor.state, anchor.changed_commit) == ("code_changed", CHANGE)
    again = alice.post(CHANGES, body(), format="json").json()
    assert again["already_reported"] is True and again["code_changed"] == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"commit": "abc123"}, "commit"),
        ({"committed_at": "yesterday"}, "committed_at"),
        ({"files": [{"status": "copied", "path": "a.py"}]}, "files"),
        ({"files": [{"status": "modified", "path": "a.py", "hunks": [{"start": -1, "lines": 0}]}]}, "files"),
        ({"branch": "main"}, "branch"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice, change, field):
    response = alice.post(CHANGES, body(**change), format="json")
    assert response.status_code == 400, response.json()
    assert field in str(response.json())


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"files": [{"status": "renamed", "path": "b.py"}]}, "rejected_rename", "files.0.old_path"),
        ({"files": [{"status": "modified", "path": "../etc/passwd"}]}, "rejected_path", "files.0.path"),
        ({"files": [{"status": "renamed", "path": "b.py", "old_path": "/abs/a.py"}]}, "rejected_path", "files.0.old_path"),
    ],
)
def test_a_path_the_schema_allows_but_that_cannot_be_one_is_a_422_naming_it(alice, change, code, field):
    response = alice.post(CHANGES, body(**change), format="json")
    assert response.status_code == 422, response.json()
    assert response.json()["code"] == code and field in response.json()["errors"]


@pytest.mark.parametrize("repository", ["/home/alice/api", "0", "acme"])
def test_a_repository_that_is_not_a_git_remote_is_a_422_naming_the_fix(alice, repository):
    response = alice.post(CHANGES, body(repository=repository), format="json")
    assert response.status_code == 422, response.json()
    assert response.json()["code"] == "rejected_not_a_remote" and "git remote" in response.json()["detail"]


def test_a_read_only_token_may_not_report(cast, token_client):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert reader.post(CHANGES, body(), format="json").status_code == 403


@pytest.mark.cross_tenant("api-code-changes")
def test_another_orgs_token_reports_into_its_own_org_only(cast, agent, token_client):
    memory_id, anchor = anchored(agent, "Client.get retries twice", "Set timeouts on the client", symbol="Client.get")
    charlie = token_client(cast.org_b)

    response = charlie.post(CHANGES, body(), format="json")

    assert response.status_code == 200 and response.json()["code_changed"] == []
    anchor.refresh_from_db()
    assert anchor.state == "current"
    assert memory_id not in str(response.json())


def test_search_ranks_the_flagged_memory_lower_explains_why_and_shows_the_flag(alice, agent, settings):
    settings.SEARCH_CODE_CHANGED_FACTOR = 0.5
    flagged, _ = anchored(agent, "HTTP client timeouts: set both", "Set connect and read timeouts on the HTTP client",
                          symbol="Client.get")  # fmt: skip
    plain = MemoryFactory(principal=agent, title="HTTP client timeouts: set them both", content="Set connect and "
                          "read timeouts on every HTTP client").id  # fmt: skip
    query = {"query": "HTTP client timeouts", "explain": True, "limit": 5}
    alice.post(CHANGES, body(), format="json")

    hits = alice.post(SEARCH, query, format="json").json()["memories"]

    by_id = {hit["id"]: hit for hit in hits}
    flagged_score, plain_score = by_id[flagged]["explain"], by_id[plain]["explain"]
    assert flagged_score["code_changed_factor"] == 0.5 and plain_score["code_changed_factor"] == 1
    factors = ("relevance", "confidence", "recency_boost", "scope_weight", "consolidated_boost", "code_changed_factor")
    assert flagged_score["score"] == pytest.approx(math.prod(flagged_score[f] for f in factors), abs=1e-3)
    assert [hit["id"] for hit in hits].index(plain) < [hit["id"] for hit in hits].index(flagged)
    assert by_id[flagged]["code_changed"] == {
        "commit": CHANGE, "path": "app/http.py", "symbol": "Client.get", "changed_at": "2026-11-30T10:00:00Z",
    }  # fmt: skip
    assert "code_changed" not in by_id[plain]


def test_every_injected_block_says_the_code_changed_since_the_commit_and_to_verify(alice, agent):
    flagged, _ = anchored(agent, "HTTP client timeouts: set both", "Set connect and read timeouts on the HTTP client",
                          symbol="Client.get")  # fmt: skip
    alice.post(CHANGES, body(), format="json")
    warning = f'warning="the code changed since {CHANGE[:12]} — verify"'

    search = alice.post(SEARCH, {"query": "HTTP client timeouts", "inject": True, "token_budget": 2000},
                        format="json").json()  # fmt: skip
    context = alice.post(CONTEXT, {"min_confidence": 0.5}, format="json").json()

    assert f'id="{flagged}"' in search["injection_block"] and warning in search["injection_block"]
    assert flagged in context["memory_ids"] and warning in context["context_block"]


@pytest.mark.anyio
@pytest.mark.cross_tenant("code_changes_report")
async def test_the_mcp_tool_is_the_same_operation_within_its_tokens_org(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw_a, agent = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    memory_id, anchor = await in_thread(
        lambda: anchored(agent, "Client.get retries", "Set timeouts on the HTTP client", symbol="Client.get")
    )

    async with mcp_client(app, raw_b, "2026-07-28") as client:
        foreign = await client.call_tool("code_changes_report", body())
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        result = await client.call_tool("code_changes_report", body())
        unknown = await client.call_tool("code_changes_report", body(branch="main"))
        bad = await client.call_tool("code_changes_report", body(commit="xyz"))

    assert not foreign.is_error and foreign.structured_content["code_changed"] == []
    assert not result.is_error, dump(result)
    assert result.structured_content["code_changed"] == [memory_id]
    assert unknown.is_error and "branch" in dump(unknown)
    assert bad.is_error and "commit" in dump(bad)
    await in_thread(anchor.refresh_from_db)
    assert anchor.state == "code_changed"
