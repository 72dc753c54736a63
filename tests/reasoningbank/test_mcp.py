"""The MCP endpoint end to end: the real SDK client, over HTTP, into the composed ASGI app
(`reasoningbank.asgi.build_application`), against the real database, in both protocol eras."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.db import connection

from accounts.models import ApiToken
from memories.models import Memory, MemorySignal
from tests.factories import ProjectFactory
from tests.mcp_harness import (
    MCP_HEADERS,
    MODES,
    dump,
    http_client,
    initialize_body,
    mcp_client,
    running,
)
from tests.mcp_harness import (
    in_thread as _in_thread,
)

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

SEARCH_HIT_KEYS = {
    "id",
    "title",
    "description",
    "content",
    "outcome",
    "confidence",
    "usage_count",
    "relevance",
    "scope",
    "source",  # who wrote it, how, and whether it is trusted for injection (docs/agent-api.md)
}
MEMORY_TOOLS = {"memory_search", "memory_record", "memory_feedback", "memory_outcome", "memory_get"}
OUTCOME_DESCRIPTION = (
    "Report whether a task succeeded after using a memory. Call this after completing a task that used a "
    "retrieved memory to help the system learn which memories are actually useful."
)


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    # ORM work runs on worker threads; with CONN_MAX_AGE=0 the tools' close_old_connections() closes
    # those threads' connections, so none outlive the test (and the test database can be dropped).
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.fixture
def tokens(cast: Any, make_token: Any) -> dict[str, str]:
    """Raw tokens: A's writer, reader and write-only (limited to acme/web-app), A's org-wide token,
    B's writer (globex/billing)."""
    return {
        "a": make_token(cast.org_a, projects=[cast.project_a])[0],
        "a_read": make_token(cast.org_a, scopes=["memories:read"], projects=[cast.project_a], label="reader")[0],
        "a_write": make_token(cast.org_a, scopes=["memories:write"], projects=[cast.project_a], label="writer")[0],
        "a_org": make_token(cast.org_a, label="org-wide")[0],
        "b": make_token(cast.org_b, projects=[cast.project_b])[0],
    }


RECORD = {
    "title": "Wrap Go errors with context",
    "description": "When returning errors from Go service layers",
    "content": "Always wrap errors with fmt.Errorf and %w so callers keep the cause.",
    "outcome": "success",
    "tags": ["go", "errors"],
}


async def _record(client: Any, **overrides: Any) -> dict[str, Any]:
    result = await client.call_tool("memory_record", {**RECORD, **overrides})
    assert not result.is_error, dump(result)
    return result.structured_content


# --- discovery -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_lists_the_memory_tools_with_their_schemas_and_hints(app: Any, tokens: dict[str, str], mode: str) -> None:
    async with mcp_client(app, tokens["a"], mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert MEMORY_TOOLS <= set(tools)
    assert tools["memory_search"].annotations.read_only_hint is True
    assert tools["memory_get"].annotations.read_only_hint is True
    assert tools["memory_record"].annotations.read_only_hint is False
    for name in ("session_submit", "memory_consolidate"):  # safe to retry, changes the bank
        hints = tools[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (False, False, True)

    search = tools["memory_search"]
    assert search.description == "Search for relevant strategies and patterns"
    props = search.input_schema["properties"]
    assert search.input_schema["required"] == ["query"]
    assert props["query"]["type"] == "string" and props["query"]["description"] == "Natural language query"
    assert props["scope"]["enum"] == ["project", "team", "org", "all"] and props["scope"]["default"] == "all"
    assert props["outcome"]["enum"] == ["success", "failure", "all"] and props["outcome"]["default"] == "all"
    assert props["limit"]["type"] == "integer" and props["limit"]["default"] == 5
    assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 20)
    assert props["min_confidence"]["type"] == "number" and props["min_confidence"]["default"] == 0.5
    assert props["explain"]["default"] is False and "project" in props
    # three keys; summaries only when a search found some, query_rewrite only in deep mode, injection_block
    # only with inject (docs/search.md#the-request)
    outputs = {"memories", "total_found", "tokens_used", "summaries", "query_rewrite", "injection_block"}
    assert set(search.output_schema["properties"]) == outputs
    assert set(search.output_schema["required"]) == {"memories", "total_found", "tokens_used"}

    record = tools["memory_record"]
    assert (record.description or "").startswith("Explicitly capture a strategy or pattern")  # the tool's wording
    assert sorted(record.input_schema["required"]) == ["content", "description", "outcome", "title"]
    assert record.input_schema["properties"]["outcome"]["enum"] == ["success", "failure", "mixed"]
    assert record.input_schema["properties"]["tags"]["items"]["type"] == "string"

    feedback = tools["memory_feedback"]
    assert feedback.description == "Provide feedback on a retrieved memory"
    assert sorted(feedback.input_schema["required"]) == ["helpful", "memory_id"]

    outcome = tools["memory_outcome"]
    assert outcome.description == OUTCOME_DESCRIPTION
    assert sorted(outcome.input_schema["required"]) == ["memory_id", "succeeded"]
    assert outcome.input_schema["properties"]["session_id"]["description"] == "Optional session ID for correlation"


# --- the agent loop ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_record_search_feedback_outcome_round_trip(app: Any, tokens: dict[str, str], mode: str) -> None:
    async with mcp_client(app, tokens["a"], mode) as client:
        recorded = await _record(client)
        await _record(
            client,
            title="Prefer table-driven tests",
            description="Writing Go unit tests",
            content="List cases in a slice of structs and loop with t.Run.",
            tags=["go", "testing"],
        )
        assert recorded["message"] == "Memory recorded successfully"
        assert recorded["initial_confidence"] == pytest.approx(0.8)
        memory_id = recorded["id"]

        found = await client.call_tool("memory_search", {"query": "wrap Go errors with context"})
        assert not found.is_error, dump(found)
        body = found.structured_content
        assert set(body) == {"memories", "total_found", "tokens_used"}
        assert body["memories"][0]["id"] == memory_id
        assert set(body["memories"][0]) == SEARCH_HIT_KEYS
        assert body["memories"][0]["scope"] == "project" and body["memories"][0]["outcome"] == "success"
        assert body["total_found"] >= 1 and body["tokens_used"] > 0
        assert found.content and memory_id in found.content[0].text  # the text twin of the structured result

        explained = await client.call_tool("memory_search", {"query": "wrap Go errors", "explain": True, "limit": 1})
        assert len(explained.structured_content["memories"]) == 1
        assert {"score", "similarity", "matched_by"} <= set(explained.structured_content["memories"][0]["explain"])

        before = (await client.call_tool("memory_get", {"memory_id": memory_id})).structured_content["confidence"]
        feedback = await client.call_tool(
            "memory_feedback", {"memory_id": memory_id, "helpful": True, "comment": "saved me an hour"}
        )
        assert not feedback.is_error, dump(feedback)
        assert feedback.structured_content["success"] is True
        assert feedback.structured_content["message"] == "Feedback recorded"
        assert feedback.structured_content["new_confidence"] > before

        outcome = await client.call_tool(
            "memory_outcome", {"memory_id": memory_id, "succeeded": True, "session_id": "ses_123"}
        )
        assert not outcome.is_error, dump(outcome)
        assert outcome.structured_content["recorded"] is True
        assert outcome.structured_content["message"] == "Outcome recorded"
        assert 0 < outcome.structured_content["new_confidence"] <= 1

        detail = (await client.call_tool("memory_get", {"memory_id": memory_id})).structured_content

    assert detail["project"] == "web-app" and detail["state"] == "active" and detail["tags"] == ["go", "errors"]
    assert detail["usage_count"] == 2 and detail["last_used_at"] and detail["origin"] == "recorded"
    assert detail["consolidated_into"] is None and detail["kind"] == "procedural"
    memory = await _get_memory(memory_id)
    assert memory.project.slug == "web-app" and memory.created_by_token is not None
    assert await _signal_types(memory_id) == {"usage", "explicit", "outcome"}


@pytest.mark.parametrize("mode", MODES)
async def test_an_injection_is_an_impression_and_a_read_naming_the_session_a_use(
    app: Any, tokens: dict[str, str], mode: str
) -> None:
    """docs/confidence.md#impressions-and-use, over MCP as over REST."""
    async with mcp_client(app, tokens["a"], mode) as client:
        memory_id = (await _record(client))["id"]
        injected = await client.call_tool("memory_search", {"query": "wrap Go errors with context", "inject": True})
        assert not injected.is_error, dump(injected)
        assert [m["id"] for m in injected.structured_content["memories"]] == [memory_id]
        plain = (await client.call_tool("memory_get", {"memory_id": memory_id})).structured_content
        assert (plain["usage_count"], plain["confidence"]) == (0, pytest.approx(0.8))
        for _ in range(50):  # the count is written behind the answer
            if (await _get_memory(memory_id)).impression_count:
                break
            await asyncio.sleep(0.05)
        used = await client.call_tool("memory_get", {"memory_id": memory_id, "session_id": "ses_read"})
        assert not used.is_error, dump(used)

    assert used.structured_content["usage_count"] == 1 and used.structured_content["confidence"] > 0.8
    memory = await _get_memory(memory_id)
    assert (memory.impression_count, memory.impressions_unused, memory.usage_count) == (1, 0, 1)
    assert await _signal_types(memory_id) == {"usage"}


# --- tenancy -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.cross_tenant("memory_search", "memory_get", "memory_feedback", "memory_outcome")
async def test_another_org_never_sees_or_touches_a_memory(app: Any, tokens: dict[str, str], mode: str) -> None:
    async with mcp_client(app, tokens["a"], mode) as client_a:
        memory_id = (await _record(client_a))["id"]

    async with mcp_client(app, tokens["b"], mode) as client_b:
        found = await client_b.call_tool("memory_search", {"query": "wrap Go errors with context", "min_confidence": 0})
        assert not found.is_error
        assert found.structured_content["memories"] == [] and found.structured_content["total_found"] == 0

        for name, args in (
            ("memory_get", {"memory_id": memory_id}),
            ("memory_feedback", {"memory_id": memory_id, "helpful": False}),
            ("memory_outcome", {"memory_id": memory_id, "succeeded": False}),
        ):
            result = await client_b.call_tool(name, args)
            assert result.is_error, name
            assert f"memory '{memory_id}' not found" in result.content[0].text

        # naming the other org's project does not help either (and does not reveal that it exists)
        result = await client_b.call_tool("memory_search", {"query": "errors", "project": "web-app"})
        assert result.is_error and "project 'web-app' not found" in result.content[0].text

    assert await _signal_types(memory_id) == set()


# --- authentication and scopes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "error"),
    [
        (None, None),
        ("Bearer rb_not-a-real-token", "invalid_token"),
        ("Basic dXNlcjpwYXNz", None),
        ("Bearer", "invalid_request"),
    ],
)
async def test_missing_or_invalid_token_is_401_pointing_at_the_oauth_metadata(
    app: Any, tokens: dict[str, str], authorization: str | None, error: str | None
) -> None:
    """The MCP 2026-07-28 challenge (docs/security/http-hardening.md#401s-rfc-6750-challenges): where to
    discover the authorization server, and the scopes; an ``error`` only when a bearer token was
    attempted (RFC 6750 section 3.1), ``invalid_request`` for a ``Bearer`` header without one, as on REST
    (the reasons: tests/accounts/tokens/test_authentication_errors.py)."""
    headers = dict(MCP_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    async with http_client(app) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=headers)

    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="mcp", ')
    assert ('error="' in challenge) is (error is not None)
    assert error is None or f'error="{error}"' in challenge
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="memories:read memories:write consolidation:run"' in challenge
    assert response.json()["error"] == (error or "invalid_token")


async def test_a_revoked_token_stops_working(app: Any, tokens: dict[str, str]) -> None:
    async with mcp_client(app, tokens["a"], "legacy") as client:
        assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error
    await _revoke_all_tokens()
    async with http_client(app, tokens["a"]) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 401


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_only_token_may_search_but_not_write(app: Any, tokens: dict[str, str], mode: str) -> None:
    async with mcp_client(app, tokens["a"], mode) as writer:
        memory_id = (await _record(writer))["id"]

    async with mcp_client(app, tokens["a_read"], mode) as reader:
        found = await reader.call_tool("memory_search", {"query": "wrap Go errors"})
        assert not found.is_error and found.structured_content["memories"][0]["id"] == memory_id
        assert not (await reader.call_tool("memory_get", {"memory_id": memory_id})).is_error

        for name, args in (
            ("memory_record", RECORD),
            ("memory_feedback", {"memory_id": memory_id, "helpful": True}),
            ("memory_outcome", {"memory_id": memory_id, "succeeded": True}),
        ):
            result = await reader.call_tool(name, args)
            assert result.is_error, name
            assert "this token lacks the 'memories:write' scope" in result.content[0].text

    assert await _memory_count() == 1


async def test_a_write_only_token_cannot_read(app: Any, tokens: dict[str, str]) -> None:
    async with mcp_client(app, tokens["a_write"], "legacy") as client:
        result = await client.call_tool("memory_search", {"query": "errors"})
    assert result.is_error and "this token lacks the 'memories:read' scope" in result.content[0].text


async def test_an_org_wide_token_in_an_org_with_one_project_records_there_without_naming_it(
    app: Any, tokens: dict[str, str]
) -> None:
    async with mcp_client(app, tokens["a_org"], "2026-07-28") as client:  # the dashboard's first snippet
        recorded = await client.call_tool("memory_record", RECORD)
    assert not recorded.is_error, dump(recorded)
    memory = await _in_thread(lambda: Memory.objects.select_related("project").get())
    assert memory.project is not None and memory.project.slug == "web-app"


async def test_an_org_wide_token_must_name_the_project_to_record(app: Any, tokens: dict[str, str], cast: Any) -> None:
    await _in_thread(lambda: ProjectFactory(organization=cast.org_a, slug="mobile"))
    async with mcp_client(app, tokens["a_org"], "2026-07-28") as client:  # not limited to a project
        missing = await client.call_tool("memory_record", RECORD)
        assert missing.is_error and "project is required" in missing.content[0].text
        named = await client.call_tool("memory_record", {**RECORD, "project": "web-app"})
        assert not named.is_error, dump(named)
        org_wide = await client.call_tool("memory_record", {**RECORD, "scope": "org"})
        assert not org_wide.is_error, dump(org_wide)
        found = await client.call_tool("memory_search", {"query": "wrap Go errors", "scope": "org"})
    assert [m["scope"] for m in found.structured_content["memories"]] == ["org"]


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "arguments", "names"),
    [
        ("memory_search", {"query": "errors", "limit": 50}, ["limit", "20"]),
        ("memory_search", {"query": "errors", "min_confidence": 2}, ["min_confidence"]),
        ("memory_search", {"query": "errors", "scope": "galaxy"}, ["scope"]),
        ("memory_search", {"query": "   "}, ["query: must not be empty"]),
        ("memory_search", {}, ["query", "required"]),
        ("memory_record", {**RECORD, "outcome": "maybe"}, ["outcome", "'success', 'failure' or 'mixed'"]),
        ("memory_record", {**RECORD, "title": ""}, ["title: must not be empty"]),
        ("memory_record", {**RECORD, "tags": "go"}, ["tags"]),
        ("memory_feedback", {"memory_id": "mem_nope", "helpful": True}, ["memory 'mem_nope' not found"]),
        ("memory_get", {"memory_id": "x" * 500}, ["not found"]),
    ],
)
async def test_bad_input_is_an_error_result_naming_the_problem(
    app: Any, tokens: dict[str, str], mode: str, tool: str, arguments: dict[str, Any], names: list[str]
) -> None:
    async with mcp_client(app, tokens["a"], mode) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    for name in names:
        assert name in text, text
    assert await _memory_count() == 0


# --- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_results_never_echo_the_raw_token(app: Any, tokens: dict[str, str], mode: str) -> None:
    raw = tokens["a"]
    secret_part = raw[len("rb_") :]
    async with mcp_client(app, raw, mode) as client:
        results = [await client.list_tools()]
        recorded = await client.call_tool("memory_record", RECORD)
        memory_id = recorded.structured_content["id"]
        results += [
            recorded,
            await client.call_tool("memory_search", {"query": "wrap Go errors", "explain": True}),
            await client.call_tool("memory_get", {"memory_id": memory_id}),
            await client.call_tool("memory_feedback", {"memory_id": memory_id, "helpful": True}),
            await client.call_tool("memory_record", {**RECORD, "title": ""}),
            await client.call_tool("memory_get", {"memory_id": "mem_unknown"}),
        ]
    for result in results:
        assert secret_part not in dump(result)


def test_tools_see_the_token_prefix_never_the_raw_token(cast: Any, make_token: Any) -> None:
    from accounts.mcp_auth import access_token_for

    raw, principal = make_token(cast.org_a)
    access = access_token_for(principal.token)
    assert access.token == principal.token.prefix and raw.startswith(access.token)
    assert access.client_id == str(principal.token.id)
    assert access.scopes == list(principal.token.scopes)
    assert raw[len("rb_") :] not in access.model_dump_json()


def test_the_server_offers_the_memory_session_and_consolidation_tools() -> None:
    import anyio

    from reasoningbank import mcp_server

    names = {tool.name for tool in anyio.run(mcp_server.build_mcp_server().list_tools)}
    others = {
        "session_submit",
        "memory_consolidate",
        "memory_context",
        "memory_ask",
        "session_code_report",
        "code_changes_report",
        "memory_recall",
    }
    assert names == MEMORY_TOOLS | others


# --- transport: hosts, origins, paths, lifespan ----------------------------------------------------


async def test_a_foreign_host_is_rejected(app: Any, tokens: dict[str, str]) -> None:
    for token in (tokens["a"], None):
        async with http_client(app, token, Host="evil.example") as http:
            response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
        assert response.status_code == 421


async def test_a_foreign_origin_is_rejected(app: Any, tokens: dict[str, str]) -> None:
    async with http_client(app, tokens["a"], Origin="https://evil.example") as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 403


async def test_allowed_hosts_and_origins_are_accepted(settings: Any, tokens: dict[str, str]) -> None:
    from reasoningbank.asgi import build_application

    settings.ALLOWED_HOSTS = ["mcp.example.com", "127.0.0.1"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://dashboard.example.org"]
    async with running(build_application()) as app:
        for host, origin, status in (
            ("mcp.example.com", None, 200),
            ("mcp.example.com:8443", "https://mcp.example.com:8443", 200),
            ("127.0.0.1:8000", "https://dashboard.example.org", 200),
            ("testserver", None, 421),
            ("other.example.com", None, 421),
            ("mcp.example.com", "https://evil.example", 403),
        ):
            extra = {"Host": host} | ({"Origin": origin} if origin else {})
            async with http_client(app, tokens["a"], **extra) as http:
                response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
            assert response.status_code == status, (host, origin, response.text)
            if status == 200:
                assert response.json()["result"]["serverInfo"]["name"] == "reasoningbank"


async def test_django_wildcard_hosts_are_honoured(settings: Any, tokens: dict[str, str]) -> None:
    from reasoningbank.asgi import build_application

    settings.ALLOWED_HOSTS = [".tenant.example"]
    async with running(build_application()) as app:
        for host, status in (("tenant.example", 200), ("api.tenant.example:443", 200), ("tenant.example.evil", 421)):
            async with http_client(app, tokens["a"], Host=host) as http:
                response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
            assert response.status_code == status, host


def test_transport_security_settings_follow_allowed_hosts(settings: Any) -> None:
    from reasoningbank.mcp_server import transport_security_settings

    settings.ALLOWED_HOSTS = ["mcp.example.com", "[::1]"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com"]
    security = transport_security_settings()
    assert security.enable_dns_rebinding_protection
    assert {"mcp.example.com", "mcp.example.com:*", "[::1]", "[::1]:*"} == set(security.allowed_hosts)
    assert {"https://mcp.example.com", "http://[::1]:*", "https://app.example.com"} <= set(security.allowed_origins)

    for hosts in (["*"], ["mcp.example.com", ".example.com"]):
        settings.ALLOWED_HOSTS = hosts  # wildcards: Django-style matching in our middleware instead
        assert not transport_security_settings().enable_dns_rebinding_protection


async def test_trailing_slash_and_django_routes(app: Any, tokens: dict[str, str]) -> None:
    async with http_client(app, tokens["a"]) as http:
        slash = await http.post("/mcp/", json=initialize_body(), headers=MCP_HEADERS)
        health = await http.get("/healthz")
        get = await http.get("/mcp", headers={"Accept": "text/event-stream"})
        anonymous_get = await http.get("/mcp", headers={"Authorization": ""})
    assert slash.status_code == 200 and slash.json()["result"]["serverInfo"]["name"] == "reasoningbank"
    assert health.status_code == 200 and health.json()["status"] == "ok"
    # no standalone SSE stream on a stateless JSON server (allowed by the spec in both eras)
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    assert anonymous_get.status_code == 401


async def test_raw_legacy_handshake_and_call(app: Any, tokens: dict[str, str]) -> None:
    """What a plain HTTP client sees (curl, or an SDK's HTTP client before the MCP layer)."""
    async with http_client(app, tokens["a"]) as http:
        init = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
        assert init.status_code == 200 and init.headers["content-type"].startswith("application/json")
        version = init.json()["result"]["protocolVersion"]
        headers = MCP_HEADERS | {"MCP-Protocol-Version": version}
        await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = await http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "memory_record", "arguments": RECORD},
            },
            headers=headers,
        )
    result = call.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["message"] == "Memory recorded successfully"


# --- db helpers (the ORM is sync; tests run on the event loop) ------------------------------------


async def _get_memory(memory_id: str) -> Memory:
    return await _in_thread(lambda: Memory.objects.select_related("project", "created_by_token").get(pk=memory_id))


async def _signal_types(memory_id: str) -> set[str]:
    return await _in_thread(
        lambda: set(MemorySignal.objects.filter(memory_id=memory_id).values_list("type", flat=True))
    )


async def _memory_count() -> int:
    return await _in_thread(lambda: Memory.objects.count())


async def _revoke_all_tokens() -> None:
    from django.utils import timezone

    await _in_thread(lambda: ApiToken.objects.update(revoked_at=timezone.now()))


async def test_the_composed_app_runs_its_lifespan_and_serves_mcp_without_a_database() -> None:
    """Startup/shutdown go to the MCP app; an unauthenticated /mcp request never reaches Django."""
    from reasoningbank.asgi import build_application

    async with running(build_application()) as app:
        async with http_client(app) as http:
            response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 401


@pytest.mark.cross_tenant("memory_record")
@pytest.mark.parametrize("mode", MODES)
async def test_another_orgs_token_cannot_record_into_its_project(app: Any, tokens: dict[str, str], mode: str) -> None:
    async with mcp_client(app, tokens["b"], mode) as client_b:
        result = await client_b.call_tool("memory_record", {**RECORD, "project": "web-app"})
    assert result.is_error
    assert "project 'web-app' not found" in result.content[0].text
    assert await _memory_count() == 0
