"""The project from the agent's repository (docs/code-memory.md#projects-by-repository): memory_context,
memory_search and session_submit take ``repository`` (any spelling of the remote) and work in the project
tied to it when no ``project`` is named — over REST and MCP; a named project wins; a remote tied to no
project, or to another organization's, changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Project
from memories.models import AgentSession
from tests.factories import MemoryFactory, ProjectFactory
from tests.mcp_harness import in_thread, mcp_client

SPELLINGS = ["git@github.com:acme/web.git", "https://alice@github.com/acme/web/", "ssh://git@github.com:22/acme/web"]


@pytest.fixture
def two_projects(cast: Any) -> Project:
    """Org A with web-app tied to github.com/acme/web and a second project, so that a call naming no
    project is ambiguous unless the repository says which."""
    Project.objects.filter(pk=cast.project_a.pk).update(repository="github.com/acme/web")
    return ProjectFactory(organization=cast.org_a, slug="mobile")


@pytest.mark.django_db
@pytest.mark.parametrize("remote", SPELLINGS)
def test_every_spelling_of_the_remote_reaches_the_tied_project(
    cast: Any, token_client: Any, two_projects: Any, remote: str
) -> None:
    client = token_client(cast.org_a)
    assert client.post("/api/v1/memories/context", {}, format="json").status_code == 400  # which project?
    answer = client.post("/api/v1/memories/context", {"repository": remote}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["project"] == "web-app"
    submitted = client.post(
        "/api/v1/sessions",
        {"session_id": "s-1", "trace": "user: fix\nagent: fixed", "repository": remote},
        format="json",
    )
    assert submitted.status_code in (200, 201, 202), submitted.json()
    assert AgentSession.objects.get(external_id="s-1").project_id == cast.project_a.id


@pytest.mark.django_db
def test_search_keeps_to_the_tied_projects_memories(cast: Any, token_client: Any, two_projects: Any) -> None:
    alice = cast.principal(cast.alice)
    MemoryFactory(
        principal=alice, project="web-app", title="Pool teardown in web",
        content="Close the database pool in the web test teardown so connections return.",
    )
    MemoryFactory(
        principal=alice, project="mobile", title="Pool teardown in mobile",
        content="Drain the mobile worker pool in teardown, or the simulator keeps 8 threads alive.",
    )
    client = token_client(cast.org_a)
    body = {"query": "pool teardown", "min_confidence": 0, "scope": "project"}
    everything = client.post("/api/v1/memories/search", body, format="json").json()["memories"]
    tied = client.post("/api/v1/memories/search", {**body, "repository": SPELLINGS[0]}, format="json").json()[
        "memories"
    ]
    assert len(everything) == 2
    assert [hit["title"] for hit in tied] == ["Pool teardown in web"]


@pytest.mark.django_db
def test_a_named_project_wins_over_the_repository(cast: Any, token_client: Any, two_projects: Any) -> None:
    client = token_client(cast.org_a)
    answer = client.post("/api/v1/memories/context", {"project": "mobile", "repository": SPELLINGS[0]}, format="json")
    assert answer.json()["project"] == "mobile"


@pytest.mark.django_db
def test_an_untied_remote_falls_back_to_the_usual_rules(cast: Any, token_client: Any) -> None:
    client = token_client(cast.org_a)  # one project in the org: it is the one
    answer = client.post("/api/v1/memories/context", {"repository": "github.com/acme/elsewhere"}, format="json")
    assert answer.json()["project"] == "web-app"


@pytest.mark.django_db
@pytest.mark.cross_tenant("api-memory-context", "api-sessions")
def test_another_orgs_tied_project_is_never_reached(cast: Any, token_client: Any, two_projects: Any) -> None:
    theirs = token_client(cast.org_b)  # globex has billing alone; acme's web-app is tied to the remote
    answer = theirs.post("/api/v1/memories/context", {"repository": SPELLINGS[0]}, format="json")
    assert answer.json()["project"] == "billing"
    theirs.post(
        "/api/v1/sessions",
        {"session_id": "s-b", "trace": "user: x\nagent: y", "repository": SPELLINGS[0]},
        format="json",
    )
    assert AgentSession.objects.get(external_id="s-b").project_id == cast.project_b.id


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.cross_tenant("memory_context")
async def test_over_mcp_the_repository_reaches_the_tied_project_of_the_tokens_org_only(
    app: Any, cast: Any, make_token: Any
) -> None:
    await in_thread(lambda: Project.objects.filter(pk=cast.project_a.pk).update(repository="github.com/acme/web"))
    await in_thread(lambda: ProjectFactory(organization=cast.org_a, slug="mobile"))
    raw_a, _ = await in_thread(lambda: make_token(cast.org_a))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b))
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        ours = await client.call_tool("memory_context", {"repository": SPELLINGS[1]})
    async with mcp_client(app, raw_b, "2026-07-28") as client:
        theirs = await client.call_tool("memory_context", {"repository": SPELLINGS[1]})
    assert ours.structured_content["project"] == "web-app"
    assert theirs.structured_content["project"] == "billing"
