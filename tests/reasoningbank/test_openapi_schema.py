"""The generated OpenAPI schema (``/api/schema/``) documents the REST API for its users
(docs/agent-api.md#errors-an-agent-can-get): every operation has a summary and a description written for
API users (no code docstring leftovers), declares the error statuses it can answer with the one ``Error``
body, every list is a page object, and request bodies allow no undeclared fields."""

from __future__ import annotations

import re
from typing import Any

import pytest

LEFTOVERS = re.compile(r"seed \d|\bseed\b|Base for|Subclasses|required_scopes|``|self\.|docstring|TODO", re.I)
ERROR_REF = "#/components/schemas/Error"
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict[str, Any]:
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = [
        (path, method, operation)
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1/")
        for method, operation in item.items()
        if method in METHODS
    ]
    assert len(found) >= 23
    return found


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_every_operation_has_a_summary_and_a_description_written_for_api_users(schema):
    for path, method, operation in operations(schema):
        where = f"{method.upper()} {path}"
        assert operation.get("summary"), where
        assert len(operation.get("description", "")) >= 40, where
        for text in (operation["summary"], operation["description"]):
            assert not LEFTOVERS.search(text), f"{where}: {text!r}"
        assert operation.get("tags") and operation["tags"] != ["v1"], where


def test_every_parameter_and_component_is_described_without_code_leftovers(schema):
    for path, method, operation in operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                assert parameter.get("description"), f"{method.upper()} {path}: {parameter['name']}"
    for name, component in schema["components"]["schemas"].items():
        texts = [component.get("description", "")]
        texts += [prop.get("description", "") for prop in component.get("properties", {}).values()]
        for text in texts:
            assert not LEFTOVERS.search(text), f"{name}: {text!r}"
    assert not LEFTOVERS.search(schema["info"]["description"])


def test_every_operation_declares_its_error_statuses_with_the_error_body(schema):
    for path, method, operation in operations(schema):
        where = f"{method.upper()} {path}"
        responses = operation["responses"]
        expected = {"401", "403"}
        names = {p["name"] for p in operation.get("parameters", [])}
        if "{" in path or "page" in names:
            expected.add("404")
        if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", [])):
            expected.add("400")
        if method in {"post", "patch", "put"}:
            expected |= {"400", "415"}
        assert expected <= set(responses), f"{where}: missing {sorted(expected - set(responses))}"
        for status, response in responses.items():
            if status.startswith("4"):
                assert response["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}, where
                assert response.get("description"), f"{where} {status}"


def test_the_error_body_always_has_detail_code_and_errors(schema):
    error = schema["components"]["schemas"]["Error"]

    assert set(error["required"]) == {"detail", "code", "errors"}
    assert error["properties"]["errors"]["additionalProperties"]["items"]["type"] == "string"


CURSOR_PAGED = {"/api/v1/audit"}


def test_every_list_operation_answers_a_page_object(schema):
    lists = [
        (path, operation)
        for path, method, operation in operations(schema)
        if method == "get" and operation["operationId"].endswith("_list")
    ]
    assert {path for path, _ in lists} >= {
        "/api/v1/memories",
        "/api/v1/sessions",
        "/api/v1/consolidation/runs",
        "/api/v1/consolidation/disputes",
        "/api/v1/projects",
    }
    for path, operation in lists:
        page = resolve(schema, operation["responses"]["200"]["content"]["application/json"]["schema"])
        assert page["type"] == "object", path
        assert page["properties"]["results"]["type"] == "array", path
        if path in CURSOR_PAGED:
            # a log that grows while it is read pages by cursor (docs/decisions.md): no count, no page number
            assert set(page["required"]) == {"next", "results"}, path
            continue
        assert set(page["required"]) == {"count", "next", "previous", "results"}, path
        assert page["properties"]["results"]["type"] == "array", path
        parameters = {p["name"]: p for p in operation["parameters"]}
        assert parameters["page_size"]["schema"]["maximum"] == 200, path
        assert parameters["page"]["schema"]["minimum"] == 1, path


def test_no_operation_answers_a_bare_array(schema):
    for path, method, operation in operations(schema):
        for status, response in operation["responses"].items():
            body = response.get("content", {}).get("application/json", {}).get("schema", {})
            assert resolve(schema, body).get("type") != "array", f"{method.upper()} {path} {status}"


# the one request that also takes a file as its body: the import takes an export as it was written
# (docs/export-import.md)
FILE_BODIES = {("post", "/api/v1/import"): "application/x-ndjson"}


def test_request_bodies_are_json_objects_that_allow_no_other_fields(schema):
    for path, method, operation in operations(schema):
        if "requestBody" not in operation:
            continue
        content = operation["requestBody"]["content"]
        file_body = FILE_BODIES.get((method, path))
        assert set(content) == {"application/json", *([file_body] if file_body else [])}, f"{method.upper()} {path}"
        if file_body:
            assert content[file_body]["schema"] == {"type": "string"}, f"{method.upper()} {path}"
        body = resolve(schema, content["application/json"]["schema"])
        assert body["additionalProperties"] is False, f"{method.upper()} {path}"


def test_request_strings_declare_what_the_api_refuses_in_them(schema):
    """A NUL character (PostgreSQL cannot store it) or a blank required value is refused with a 400,
    so the schema says so with a pattern: a schema-valid body is never refused."""
    components = schema["components"]["schemas"]
    create = components["RecordRequest"]["properties"]
    search = components["SearchRequest"]["properties"]

    title = create["title"]["pattern"]
    assert re.fullmatch(title, "Pin seeds")
    assert not re.search(title, "   ") and not re.search(title, "a\x00b")
    assert "pattern" in create["tags"]["items"] and "pattern" in search["query"]
    assert components["SessionSubmitRequest"]["properties"]["trace"]["pattern"] == "\\S"  # NUL is removed
    assert components["ConsolidateRestRequest"]["not"] == {"required": ["project", "project_id"]}


def request_strings(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every string a request body may hold, as (where, its schema), through references, lists and
    ``anyOf``/``oneOf`` (an optional field is ``anyOf`` [string, null])."""
    found: list[tuple[str, dict[str, Any]]] = []

    def walk(where: str, node: dict[str, Any], seen: frozenset[str]) -> None:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[1]
            if name not in seen:
                walk(where, schema["components"]["schemas"][name], seen | {name})
            return
        if node.get("type") == "string":
            found.append((where, node))
        for key in ("anyOf", "oneOf", "allOf"):
            for option in node.get(key, []):
                walk(where, option, seen)
        if "items" in node:
            walk(f"{where}[]", node["items"], seen)
        for name, child in node.get("properties", {}).items():
            walk(f"{where}.{name}", child, seen)

    for path, method, operation in operations(schema):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            walk(f"{method.upper()} {path}", body, frozenset())
    return found


# kept as sent: a file's text, whose content is checked as the file it is (a 400 names its line)
UNTRIMMED = {"POST /api/v1/import.text"}


def test_a_request_string_that_must_not_be_empty_says_it_must_not_be_blank_either(schema):
    """The API trims text before it checks that it is not empty, so a value of spaces, tabs or form feeds
    is refused like an empty one: the schema says so with a pattern, or a schema-valid body would be
    refused (as `repository: "\\f"` once was)."""
    strings = request_strings(schema)
    assert len(strings) >= 50
    unsaid = [
        where
        for where, node in strings
        if where not in UNTRIMMED
        and node.get("minLength", 0) >= 1
        and "enum" not in node
        and "format" not in node
        and re.search(node.get("pattern", ""), " \t\f")
    ]
    assert unsaid == [], unsaid


def query_parameter(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    (found,) = [p["schema"] for p in schema["paths"][path]["get"]["parameters"] if p["name"] == name]
    return found


def test_a_query_parameter_a_contract_parses_declares_the_contracts_limits(schema):
    """What the contract refuses (a NUL, too long, blank) the schema says, so a schema-valid value is never a 400."""

    def refuses(parameter: dict[str, Any], value: str) -> bool:
        too_long = len(value) > parameter.get("maxLength", len(value))
        return too_long or not re.search(parameter["pattern"], value)

    session = query_parameter(schema, "/api/v1/memories/{memory_id}", "session_id")
    assert session["maxLength"] == 200 and refuses(session, "a\x00b") and refuses(session, "s" * 201)
    assert not refuses(session, "sess-1")
    project = query_parameter(schema, "/api/v1/code/history", "project")
    assert refuses(project, "web\x00app") and not refuses(project, "web-app")
    repository = query_parameter(schema, "/api/v1/code/history", "repository")
    assert refuses(repository, " \f") and refuses(repository, "github.com/a\x00")
    assert not refuses(repository, "github.com/a/b")
