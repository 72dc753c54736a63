"""Writes ``reasoningbank_client/models.py``: a TypedDict per request and response body of the operations
the client calls, read from the service's OpenAPI schema (``/api/schema/``).

    python clients/python/generate_models.py openapi.json > clients/python/reasoningbank_client/models.py

``scripts/generate-clients.sh`` runs it; tests/clients/test_client_drift.py fails when the committed
file differs from a fresh run against the live schema (docs/sdks.md#the-drift-check).
"""

from __future__ import annotations

import json
import sys
from typing import Any

HEADER = '''"""Request and response bodies of the ReasoningBank REST API, generated from its OpenAPI schema by
clients/python/generate_models.py. Do not edit: regenerate (docs/sdks.md#regenerating)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict
'''


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


def referenced(node: Any) -> list[str]:
    """Component names a schema node refers to, in document order."""
    if isinstance(node, dict):
        found = [ref_name(node["$ref"])] if "$ref" in node else []
        for key, value in node.items():
            if key != "$ref":
                found += referenced(value)
        return found
    if isinstance(node, list):
        return [name for value in node for name in referenced(value)]
    return []


def type_of(node: dict[str, Any]) -> str:
    """The Python annotation for one schema node."""
    if "$ref" in node:
        return ref_name(node["$ref"])
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " | ".join(dict.fromkeys(type_of(option) for option in node[key]))
    if "allOf" in node and len(node["allOf"]) == 1:
        text = type_of(node["allOf"][0])
    elif "enum" in node:
        values = [value for value in node["enum"] if value is not None]
        text = "Literal[" + ", ".join(json.dumps(value) for value in values) + "]" if values else "None"
        if None in node["enum"] and values:
            text += " | None"
        return text
    else:
        kind = node.get("type")
        simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
        if kind in simple:
            text = simple[kind]
        elif kind == "array":
            text = f"list[{type_of(node.get('items', {}))}]"
        elif kind == "object" or "additionalProperties" in node:
            extra = node.get("additionalProperties")
            text = f"dict[str, {type_of(extra)}]" if isinstance(extra, dict) and extra else "dict[str, Any]"
        else:
            text = "Any"
    if node.get("nullable"):
        text += " | None"
    return text


def query_parameters(schema: dict[str, Any], operation_id: str) -> dict[str, dict[str, Any]]:
    """The query parameters of one operation of the schema: name → its schema."""
    for item in schema["paths"].values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                return {
                    parameter["name"]: parameter.get("schema", {})
                    for parameter in operation.get("parameters", [])
                    if parameter.get("in") == "query"
                }
    raise KeyError(f"no operation {operation_id!r} in the schema")


def render_query(name: str, operation_id: str, parameters: dict[str, dict[str, Any]]) -> str:
    """A TypedDict of a list's query parameters, every one optional."""
    lines = [f"class {name}(TypedDict, total=False):", f'    """The query parameters of ``{operation_id}``."""', ""]
    for field, value in parameters.items():
        annotation = type_of(value)
        if len(f"    {field}: {annotation}") > 120 and annotation.startswith("Literal[") and annotation.endswith("]"):
            # wrapped the way ruff's formatter wraps it (the file stays as the formatter leaves it)
            annotation = "Literal[\n        " + annotation[len("Literal[") : -1] + "\n    ]"
        lines.append(f"    {field}: {annotation}")
    return "\n".join(lines) + "\n"


def render(schema: dict[str, Any], roots: list[str], queries: dict[str, str] | None = None) -> str:
    """models.py for these component names and every component they refer to, dependencies first; then a
    TypedDict of query parameters for each ``queries`` entry (its name → the operation's id)."""
    components = schema["components"]["schemas"]
    order: list[str] = []
    query_blocks = {name: query_parameters(schema, operation_id) for name, operation_id in (queries or {}).items()}
    roots = roots + [ref for parameters in query_blocks.values() for ref in referenced(parameters)]

    def visit(name: str) -> None:
        if name in order:
            return
        order.append(name)  # placeholder against cycles; moved after its dependencies below
        for dependency in referenced(components[name]):
            visit(dependency)
        order.remove(name)
        order.append(name)

    for root in roots:
        visit(root)
    blocks = []
    for name in order:
        node = components[name]
        if node.get("type") != "object" and "properties" not in node:
            blocks.append(f"{name} = {type_of(node)}\n")
            continue
        required = set(node.get("required", []))
        lines = [f"class {name}(TypedDict):"]
        if node.get("description") and '"""' not in node["description"] and "\\" not in node["description"]:
            text = node["description"].strip().replace("\n", "\n    ")
            lines.append(f'    """{text}"""')
            lines.append("")
        properties = node.get("properties", {})
        for field, value in properties.items():
            annotation = type_of(value)
            lines.append(f"    {field}: {annotation if field in required else f'NotRequired[{annotation}]'}")
        if not properties:
            lines.append("    pass")
        blocks.append("\n".join(lines) + "\n")
    for name, parameters in query_blocks.items():
        blocks.append(render_query(name, (queries or {})[name], parameters))
    # the blank lines ruff's formatter and import sorter want: one after the imports before an assignment
    gap = "\n\n" if blocks and blocks[0].startswith("class ") else "\n"
    return HEADER + gap + "\n\n".join(blocks)


def main() -> None:
    from reasoningbank_client.operations import MODEL_ROOTS, QUERY_MODELS

    with open(sys.argv[1], encoding="utf-8") as handle:
        schema = json.load(handle)
    sys.stdout.write(render(schema, list(MODEL_ROOTS), QUERY_MODELS))


if __name__ == "__main__":
    main()
