"""memory_recall across organizations (docs/tenancy.md): another organization's memories anchored to the
same repository, path and error signature never come back — over REST and over MCP (the official SDK
client) — and one organization's session ledger is not another's."""

from __future__ import annotations

from typing import Any

import pytest

from memories.code.signatures import error_signature
from memories.models import MemoryAnchor
from tests.factories import MemoryFactory
from tests.mcp_harness import in_thread, mcp_client

RECALL = "/api/v1/memories/recall"
REPO = "github.com/acme/shop"
ERROR = (
    'Traceback (most recent call last):\n  File "/x/shop/cart.py", line 9, in total\n'
    "ZeroDivisionError: division by zero\n"
)


def anchored(principal: Any, title: str, project: str) -> str:
    """A memory of ``principal``'s org anchored to the same file and the same error as every other one."""
    memory = MemoryFactory(principal=principal, title=title, project=project)
    signature = error_signature(ERROR)
    assert signature is not None
    MemoryAnchor.objects.create(organization=memory.organization, memory=memory, repository=REPO, path="shop/cart.py")
    MemoryAnchor.objects.create(
        organization=memory.organization, memory=memory, error_signature=signature.digest, error_text=signature.text
    )
    return memory.id


@pytest.mark.cross_tenant("api-memory-recall")
def test_another_orgs_anchored_memories_never_come_back_over_rest(cast, make_token, token_client):
    _, principal_a = make_token(cast.org_a)
    _, principal_b = make_token(cast.org_b)
    mine = anchored(principal_a, "Cart totals divide by the item count", "web-app")
    theirs = anchored(principal_b, "Globex cart lesson", "billing")
    client_a = token_client(cast.org_a)

    by_path = client_a.post(RECALL, {"repository": REPO, "path": "shop/cart.py"}, format="json").json()
    by_error = client_a.post(RECALL, {"error": ERROR}, format="json").json()
    named = client_a.post(RECALL, {"path": "shop/cart.py", "project": "billing"}, format="json")

    assert [m["id"] for m in by_path["memories"]] == [mine]
    assert [m["id"] for m in by_error["memories"]] == [mine]
    assert theirs not in by_path["injection_block"] + by_error["injection_block"]
    assert named.status_code == 404  # org B's project is not named to org A either


@pytest.mark.cross_tenant("api-memory-recall")
def test_another_orgs_ledger_does_not_hide_a_memory_from_a_session_of_the_same_id(cast, make_token, token_client):
    _, principal_a = make_token(cast.org_a)
    _, principal_b = make_token(cast.org_b)
    mine = anchored(principal_a, "Cart totals divide by the item count", "web-app")
    theirs = anchored(principal_b, "Globex cart lesson", "billing")
    body = {"repository": REPO, "path": "shop/cart.py", "session_id": "same-session"}

    given_b = token_client(cast.org_b).post(RECALL, body, format="json").json()
    given_a = token_client(cast.org_a).post(RECALL, body, format="json").json()

    assert [m["id"] for m in given_b["memories"]] == [theirs]
    assert [m["id"] for m in given_a["memories"]] == [mine]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.cross_tenant("memory_recall")
async def test_the_mcp_tool_recalls_the_same_and_keeps_to_its_tokens_org(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw_a, principal_a = await in_thread(lambda: make_token(cast.org_a))
    _, principal_b = await in_thread(lambda: make_token(cast.org_b))
    mine = await in_thread(lambda: anchored(principal_a, "Cart totals divide by the item count", "web-app"))
    theirs = await in_thread(lambda: anchored(principal_b, "Globex cart lesson", "billing"))

    async with mcp_client(app, raw_a, "2026-07-28") as client:
        by_path = await client.call_tool(
            "memory_recall", {"repository": f"git@github.com:{REPO.split('/', 1)[1]}.git", "path": "shop/cart.py"}
        )
        by_error = await client.call_tool("memory_recall", {"error": ERROR, "session_id": "mcp-session"})
        again = await client.call_tool("memory_recall", {"error": ERROR, "session_id": "mcp-session"})
        unknown = await client.call_tool("memory_recall", {"path": "shop/cart.py", "file": "x"})

    assert not by_path.is_error, by_path.content[0].text
    assert [m["id"] for m in by_path.structured_content["memories"]] == [mine]
    assert [m["id"] for m in by_error.structured_content["memories"]] == [mine]
    assert by_error.structured_content["error_signature"]["type"] == "ZeroDivisionError"
    assert theirs not in str(by_path.structured_content) + str(by_error.structured_content)
    assert again.structured_content["memories"] == []  # the ledger: never the same memory twice
    assert unknown.is_error and "file" in unknown.content[0].text
