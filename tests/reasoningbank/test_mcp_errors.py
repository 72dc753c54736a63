"""Malformed MCP calls get answers an agent can act on: one sentence per bad argument (not a
pydantic dump), and a JSON-RPC error for a request whose id is null or an object (not a silent 202).
Driven with the official SDK client in both protocol eras, and raw HTTP for what no client sends."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from django.db import connection
from pydantic import BaseModel, Field, ValidationError

from reasoningbank.mcp_errors import arguments_error_text, jsonrpc_id_problem
from tests.mcp_harness import MCP_HEADERS, MODES, dump, http_client, in_thread, initialize_body, mcp_client

# --- the wording, on real pydantic errors ----------------------------------------------------------


class Arguments(BaseModel):
    query: str
    limit: Annotated[int, Field(ge=1, le=20)] = 5
    min_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    scope: Literal["project", "team", "org", "all"] = "all"
    title: Annotated[str, Field(min_length=1, max_length=200)] = "t"
    tags: list[str] = []
    helpful: bool = True


def problems(**arguments: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        Arguments.model_validate(arguments)
    return arguments_error_text("memory_search", caught.value.errors(include_url=False))


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({}, "- query: is required."),
        ({"query": "q", "limit": 50}, "- limit: must be at most 20."),
        ({"query": "q", "limit": 0}, "- limit: must be at least 1."),
        ({"query": "q", "limit": "many"}, "- limit: must be an integer."),
        ({"query": "q", "limit": 2.5}, "- limit: must be a whole number."),
        ({"query": "q", "min_confidence": "high"}, "- min_confidence: must be a number."),
        ({"query": "q", "scope": "galaxy"}, "- scope: must be 'project', 'team', 'org' or 'all'."),
        ({"query": "q", "title": ""}, "- title: must not be empty."),
        ({"query": "q", "title": "x" * 201}, "- title: must be at most 200 characters long."),
        ({"query": "q", "tags": "go"}, "- tags: must be a list."),
        ({"query": "q", "tags": ["go", 7]}, "- tags[1]: must be a string."),
        ({"query": "q", "helpful": "perhaps"}, "- helpful: must be true or false."),
        ({"query": 42}, "- query: must be a string."),
    ],
)
def test_each_bad_argument_reads_as_one_sentence(arguments: dict[str, Any], line: str) -> None:
    text = problems(**arguments)
    assert text == f"Invalid arguments for memory_search (nothing was done):\n{line}"


def test_several_bad_arguments_get_a_line_each_without_echoing_values_or_urls() -> None:
    text = problems(query="q", limit=50, scope="galaxy", title="s3cr3t-" * 40)
    assert text.splitlines()[1:] == [
        "- limit: must be at most 20.",
        "- scope: must be 'project', 'team', 'org' or 'all'.",
        "- title: must be at most 200 characters long.",
    ]
    assert "s3cr3t" not in text and "galaxy" not in text and "http" not in text and "validation error" not in text


def test_an_unknown_kind_of_error_falls_back_to_pydantics_sentence_as_a_predicate() -> None:
    text = arguments_error_text("t", [{"type": "url_parsing", "loc": ("site",), "msg": "Input should be a valid URL"}])
    assert text.endswith("- site: must be a valid URL.")
    custom = arguments_error_text("t", [{"type": "value_error", "loc": ("x",), "msg": "Value error, Too Long"}])
    assert custom.endswith("- x: too Long.")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', "not null"),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', "not an object"),
        (b'{"jsonrpc":"2.0","id":[1],"method":"tools/list"}', "not an array"),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', "not a boolean"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', "not a fractional number"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', "batches are not supported"),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', None),
        (b'{"jsonrpc":"2.0","id":"a","method":"tools/list"}', None),
        (b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}', None),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None),
        (b"not json", None),  # the SDK's own parse error
        (b'"a string"', None),
    ],
)
def test_only_a_malformed_id_or_a_batch_is_refused_before_the_sdk(body: bytes, problem: str | None) -> None:
    found = jsonrpc_id_problem(body)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith("Invalid Request: ") and problem in found


# --- end to end ------------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.fixture
def token(cast: Any, make_token: Any) -> str:
    return make_token(cast.org_a, projects=[cast.project_a])[0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("memory_search", {"query": "errors", "limit": 50}, ["- limit: must be at most 20."]),
        (
            "memory_search",
            {"query": "errors", "scope": "galaxy", "min_confidence": "high"},
            ["- scope: must be 'project', 'team', 'org' or 'all'.", "- min_confidence: must be a number."],
        ),
        ("memory_record", {"title": "T", "description": "D", "content": "C"}, ["- outcome: is required."]),
        ("memory_feedback", {"memory_id": "mem_x", "helpful": "perhaps"}, ["- helpful: must be true or false."]),
        (
            "session_submit",
            {"session_id": "s" * 201, "outcome": "done", "trace": "t"},
            [
                "- session_id: must be at most 200 characters long.",
                "- outcome: must be 'success', 'failure' or 'unknown'.",
            ],
        ),
        (
            "memory_consolidate",
            {"project_id": "web-app", "similarity_threshold": 0.2},
            ["- similarity_threshold: must be at least 0.5."],
        ),
    ],
)
async def test_a_tool_called_with_bad_arguments_answers_one_sentence_per_field(
    app: Any, token: str, mode: str, tool: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    async with mcp_client(app, token, mode) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert text == "\n".join([f"Invalid arguments for {tool} (nothing was done):", *expected])
    assert "pydantic" not in dump(result) and "validation error" not in text


@pytest.mark.parametrize("mode", MODES)
async def test_a_service_error_keeps_its_own_message(app: Any, token: str, mode: str) -> None:
    async with mcp_client(app, token, mode) as client:
        result = await client.call_tool("memory_search", {"query": "timeouts", "project": "no-such-project"})
    assert result.is_error and "project 'no-such-project' not found" in result.content[0].text
    assert "Invalid arguments" not in result.content[0].text


ERAS = {
    "no version header": {},
    "2025-11-25": {"MCP-Protocol-Version": "2025-11-25"},
    "2026-07-28": {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("request_id", "kind"), [(None, "null"), ({"a": 1}, "an object"), ([7], "an array")])
async def test_a_request_whose_id_is_not_a_string_or_integer_is_an_invalid_request(
    app: Any, token: str, era: str, request_id: Any, kind: str
) -> None:
    async with http_client(app, token) as http:
        response = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}},
            headers=MCP_HEADERS | ERAS[era],
        )
    message = f"Invalid Request: 'id' must be a string or an integer, not {kind}."
    assert response.status_code == 400
    # JSON-RPC's error for the SDK client, and the API's error shape like every refusal under /mcp
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": message},
        "detail": message,
        "code": "invalid",
        "errors": {},
    }


@pytest.mark.parametrize("era", ["no version header", "2025-11-25"])
async def test_a_batch_is_an_invalid_request_not_a_validation_dump(app: Any, token: str, era: str) -> None:
    async with http_client(app, token) as http:
        response = await http.post("/mcp", json=[initialize_body()], headers=MCP_HEADERS | ERAS[era])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600 and "batches are not supported" in response.text


async def test_string_and_integer_ids_and_notifications_still_work(app: Any, token: str) -> None:
    async with http_client(app, token) as http:
        for request_id in ("req-1", 0, 42):
            init = await http.post("/mcp", json=initialize_body(request_id), headers=MCP_HEADERS)  # type: ignore[arg-type]
            assert init.status_code == 200 and init.json()["id"] == request_id
        version = {"MCP-Protocol-Version": init.json()["result"]["protocolVersion"]}
        note = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=MCP_HEADERS | version
        )
        listed = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers=MCP_HEADERS | version
        )
    assert note.status_code == 202
    assert listed.status_code == 200 and listed.json()["result"]["tools"]


async def test_an_anonymous_malformed_request_is_401_first(app: Any) -> None:
    async with http_client(app) as http:
        response = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": None, "method": "tools/list"}, headers=MCP_HEADERS
        )
    assert response.status_code == 401


async def test_unparsable_json_keeps_the_sdks_parse_error(app: Any, token: str) -> None:
    async with http_client(app, token) as http:
        response = await http.post("/mcp", content=b"{nope", headers=MCP_HEADERS)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32700


async def test_a_large_valid_body_reaches_the_tool_intact(app: Any, token: str) -> None:
    """The middleware reads the body once and replays it: a long trace arrives whole."""
    from memories.models import AgentSession

    trace = "agent: " + "step " * 40_000
    async with mcp_client(app, token, "legacy") as client:
        result = await client.call_tool("session_submit", {"session_id": "long", "outcome": "success", "trace": trace})
    assert not result.is_error, dump(result)
    stored = await in_thread(lambda: AgentSession.objects.get(external_id="long").trace)
    assert stored == trace


# --- unknown arguments: refused by every tool, naming the nearest known one ---------------------------

RECORD = {
    "title": "Wrap Go errors with context",
    "description": "When returning errors from Go service layers",
    "content": "Always wrap errors with fmt.Errorf and %w so callers keep the cause.",
    "outcome": "success",
}


async def _bank_counts() -> tuple[int, ...]:
    from consolidation.models import ConsolidationRun
    from memories.models import AgentSession, Memory, MemorySignal

    return await in_thread(
        lambda: tuple(m.objects.count() for m in (Memory, MemorySignal, AgentSession, ConsolidationRun))
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "arguments", "line"),
    [
        ("memory_search", {"query": "timeouts", "bogus_arg": 1}, "- bogus_arg: unknown argument 'bogus_arg'."),
        # the older name of `context`: the block would be made for an empty context, the agent's lost
        (
            "memory_context",
            {"existing_context": "You are a coding agent."},
            "- existing_context: unknown argument 'existing_context' (did you mean 'context'?).",
        ),
        ("memory_record", {**RECORD, "confidance": 0.9}, "- confidance: unknown argument 'confidance'."),
        (
            "memory_search",
            {"query": "timeouts", "confidance": 0.9},
            "- confidance: unknown argument 'confidance' (did you mean 'min_confidence'?).",
        ),
        (
            "memory_consolidate",
            {"projectid": "web-app", "dry_run": True},
            "- projectid: unknown argument 'projectid' (did you mean 'project_id'?).",
        ),
    ],
)
async def test_an_unknown_argument_is_an_error_naming_the_nearest_known_one_and_nothing_is_done(
    app: Any, token: str, mode: str, tool: str, arguments: dict[str, Any], line: str
) -> None:
    before = await _bank_counts()
    async with mcp_client(app, token, mode) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error, dump(result)
    assert result.content[0].text == f"Invalid arguments for {tool} (nothing was done):\n{line}"
    assert await _bank_counts() == before


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_argument_is_reported_with_the_missing_required_ones(app: Any, token: str, mode: str) -> None:
    async with mcp_client(app, token, mode) as client:
        result = await client.call_tool("memory_search", {"querry": "timeouts"})
    assert result.is_error
    assert result.content[0].text.splitlines()[1:] == [
        "- query: is required.",
        "- querry: unknown argument 'querry' (did you mean 'query'?).",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_every_registered_tool_refuses_an_unknown_argument_and_says_so_in_its_schema(
    app: Any, token: str, mode: str
) -> None:
    from reasoningbank.mcp_server import build_mcp_server

    registered = {tool.name for tool in await build_mcp_server().list_tools()}
    before = await _bank_counts()
    async with mcp_client(app, token, mode) as client:
        tools = (await client.list_tools()).tools
        assert {tool.name for tool in tools} == registered and len(registered) >= 10
        for tool in tools:
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            result = await client.call_tool(tool.name, {"bogus_arg": True})
            assert result.is_error, (tool.name, dump(result))
            assert "- bogus_arg: unknown argument 'bogus_arg'." in result.content[0].text.splitlines(), tool.name
    assert await _bank_counts() == before


async def test_a_tool_registered_without_a_contract_refuses_unknown_arguments_too(token: str, app: Any) -> None:
    """The check is the server's, not each tool's: a future tool module cannot forget it."""
    from reasoningbank.mcp_server import build_mcp_app, build_mcp_server
    from tests.mcp_harness import running

    server = build_mcp_server()
    calls: list[str] = []

    @server.tool(name="echo_text")
    def echo_text(text: str, loud: bool = False) -> str:
        calls.append(text)
        return text.upper() if loud else text

    async with running(build_mcp_app(server)) as mcp_app:
        for mode in MODES:
            async with mcp_client(mcp_app, token, mode) as client:
                ok = await client.call_tool("echo_text", {"text": "hi", "loud": True})
                refused = await client.call_tool("echo_text", {"text": "hi", "lowd": True})
            assert not ok.is_error and ok.content[0].text == "HI"
            assert refused.is_error
            assert refused.content[0].text.splitlines()[1:] == [
                "- lowd: unknown argument 'lowd' (did you mean 'loud'?)."
            ]
    assert calls == ["hi", "hi"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_argument_name_is_shown_short_and_without_control_characters(
    app: Any, token: str, mode: str
) -> None:
    name = "\x1b[31m\u202e" + "x" * 500
    async with mcp_client(app, token, mode) as client:
        result = await client.call_tool("memory_search", {"query": "timeouts", name: 1})
    text = result.content[0].text
    assert result.is_error and "unknown argument" in text
    assert "\x1b" not in text and "\u202e" not in text and "x" * 100 not in text


# --- prompts: this server has none; asking for one is a clean error ---------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_prompt_is_an_invalid_params_error_without_a_logged_traceback(
    app: Any, token: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    from mcp.shared.exceptions import MCPError

    caplog.set_level("INFO")
    async with mcp_client(app, token, mode) as client:
        assert (await client.list_prompts()).prompts == []
        for _ in range(2):
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("no_such_prompt", {"x": "1"})
            assert raised.value.error.code == -32602
            assert raised.value.error.message == "Unknown prompt: 'no_such_prompt'"
    assert not [r for r in caplog.records if r.levelno >= 40 or r.exc_info], [r.getMessage() for r in caplog.records]
