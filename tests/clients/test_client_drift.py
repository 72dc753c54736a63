"""The client SDKs follow the live OpenAPI schema (docs/sdks.md#the-drift-check): the Python client's
operations and body models, and the TypeScript client's generated ``schema.d.ts``, each compared with
a fresh generation from the schema the code serves now; the TypeScript client type-checks against it."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from reasoningbank_client.operations import MODEL_ROOTS, OPERATIONS, QUERY_MODELS

from tests.clients.drift import (
    OPENAPI_TYPESCRIPT_FLAGS,
    PYTHON_CLIENT,
    TS_CLIENT,
    node_missing,
    node_tools,
    python_generator,
    schema_file,
    schema_of,
)

# every MCP tool an agent calls, and the client method that is the same operation over REST
TOOL_METHODS = {
    "memory_search": "search",
    "memory_record": "record",
    "memory_get": "get",
    "memory_feedback": "feedback",
    "memory_outcome": "outcome",
    "memory_context": "context",
    "memory_ask": "ask",
    "memory_recall": "recall",
    "session_submit": "session_submit",
    "session_code_report": "session_code_report",
    "code_changes_report": "code_changes_report",
    "memory_consolidate": "consolidate",
}
NO_NODE = "node is not installed: the TypeScript client's drift and type checks need it (docs/sdks.md)"


@pytest.fixture(scope="module")
def schema_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return schema_file(tmp_path_factory.mktemp("schema"))


@pytest.fixture(scope="module")
def schema(schema_path: Path) -> dict[str, Any]:
    return schema_of(schema_path)


def diff(committed: str, fresh: str, name: str) -> str:
    lines = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), f"{name} (committed)", f"{name} (fresh)", lineterm=""
    )
    return "\n".join(list(lines)[:60])


def body_ref(content: dict[str, Any], media_type: str = "application/json") -> str | None:
    ref = content.get(media_type, {}).get("schema", {}).get("$ref")
    return ref.rsplit("/", 1)[1] if ref else None


def test_the_python_models_are_what_the_generator_makes_of_the_live_schema(schema):
    committed = (PYTHON_CLIENT / "reasoningbank_client" / "models.py").read_text(encoding="utf-8")
    fresh = python_generator().render(schema, list(MODEL_ROOTS), QUERY_MODELS)
    assert committed == fresh, "the Python client's models drifted; run scripts/generate-clients.sh\n" + diff(
        committed, fresh, "models.py"
    )


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_each_python_client_method_is_a_schema_operation_with_the_same_bodies(schema, name):
    operation = OPERATIONS[name]
    found = schema["paths"].get(operation.path, {}).get(operation.method.lower())
    assert found, f"{name}: {operation.method} {operation.path} is not in the schema"
    assert found["operationId"] == operation.operation_id
    if operation.request is not None:
        assert body_ref(found.get("requestBody", {}).get("content", {})) == operation.request
    elif name == "import_ndjson":
        assert "application/x-ndjson" in found["requestBody"]["content"]
    else:
        assert "requestBody" not in found, f"{name} sends no body but the operation takes one"
    success = {status: answer for status, answer in found["responses"].items() if status.startswith("2")}
    if operation.response is not None:
        assert {body_ref(answer.get("content", {})) for answer in success.values()} == {operation.response}
    else:
        assert all("application/x-ndjson" in answer.get("content", {}) for answer in success.values())
    query = {parameter["name"] for parameter in found.get("parameters", []) if parameter["in"] == "query"}
    assert set(operation.query) <= query, f"{name}: query parameters {set(operation.query) - query} are gone"


def test_every_agent_operation_of_the_mcp_server_has_a_client_method():
    from reasoningbank.mcp_server import build_mcp_server

    tools = {tool.name for tool in anyio.run(build_mcp_server().list_tools)}
    agent_tools = {name for name in tools if name.startswith(("memory_", "session_", "code_"))}
    assert agent_tools == set(TOOL_METHODS), "a new agent tool needs a method in both clients (docs/sdks.md)"
    assert set(TOOL_METHODS.values()) <= set(OPERATIONS)


def test_the_typescript_generate_script_uses_the_flags_the_drift_check_uses():
    script = json.loads((TS_CLIENT / "package.json").read_text(encoding="utf-8"))["scripts"]["generate"]
    assert script.split()[-len(OPENAPI_TYPESCRIPT_FLAGS) :] == OPENAPI_TYPESCRIPT_FLAGS


def run_node_tool(*args: str) -> subprocess.CompletedProcess[str]:
    if node_missing():
        pytest.skip(NO_NODE)
    tool = node_tools() / args[0]
    assert tool.exists(), f"{tool} is missing: run scripts/ensure-ts-client.sh (scripts/test.sh runs it)"
    return subprocess.run([str(tool), *args[1:]], cwd=TS_CLIENT, capture_output=True, text=True, timeout=120)


def test_the_committed_typescript_types_are_a_fresh_openapi_typescript_generation(schema_path, tmp_path):
    fresh_path = tmp_path / "schema.d.ts"
    result = run_node_tool("openapi-typescript", str(schema_path), "-o", str(fresh_path), *OPENAPI_TYPESCRIPT_FLAGS)
    assert result.returncode == 0, result.stdout + result.stderr
    committed = (TS_CLIENT / "src" / "schema.d.ts").read_text(encoding="utf-8")
    fresh = fresh_path.read_text(encoding="utf-8")
    assert committed == fresh, "the TypeScript client's types drifted; run scripts/generate-clients.sh\n" + diff(
        committed, fresh, "schema.d.ts"
    )


def test_the_typescript_client_type_checks_against_its_generated_types():
    result = run_node_tool("tsc", "--noEmit", "-p", "tsconfig.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_committed_javascript_build_is_what_tsc_makes_of_the_sources(tmp_path):
    """``npm install ./clients/typescript`` installs the committed ``dist/`` as it is (no build step on the
    user's machine, no dev tools), so it must be the build of the committed sources."""
    result = run_node_tool("tsc", "-p", "tsconfig.json", "--outDir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "schema.d.ts").write_bytes((TS_CLIENT / "src" / "schema.d.ts").read_bytes())
    committed = {path.name: path.read_text(encoding="utf-8") for path in (TS_CLIENT / "dist").iterdir()}
    fresh = {path.name: path.read_text(encoding="utf-8") for path in tmp_path.iterdir()}
    assert sorted(committed) == sorted(fresh), "run `npm run build` in clients/typescript"
    for name, text in fresh.items():
        assert committed[name] == text, f"dist/{name} is stale: run `npm run build` in clients/typescript\n" + diff(
            committed[name], text, name
        )


MISTYPED = """
from reasoningbank_client import ReasoningBank

bank = ReasoningBank("http://127.0.0.1:8000", "rb_token")
bank.search(querry="flaky test")
bank.record(title="t", description="d", content="c", outcome="maybe")
bank.search(query="flaky test")["memories"][0]["titel"]
"""


def test_a_type_checker_flags_a_misspelt_field_a_wrong_value_and_a_missing_answer_key(tmp_path):
    """The generated bodies are what the methods take and give: mypy sees the schema's fields."""
    snippet = tmp_path / "agent.py"
    snippet.write_text(MISTYPED)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "/dev/null", "--no-incremental", str(snippet)],
        env={**os.environ, "MYPYPATH": str(PYTHON_CLIENT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'Unexpected keyword argument "querry"' in result.stdout, result.stdout
    assert "expected \"Literal['success', 'failure', 'mixed']\"" in result.stdout, result.stdout
    assert 'has no key "titel"' in result.stdout, result.stdout
