"""What agents read when an MCP call is malformed (no Django here; wired in ``mcp_server.py``).

* ``arguments_error_text`` turns the SDK's argument validation failure (a pydantic dump with a
  docs URL and the caller's values echoed back) into one plain sentence per field:
  ``limit: must be at most 20.``
* ``JsonRpcIdMiddleware`` answers a JSON-RPC message whose ``id`` is null, an object, an array, a
  boolean or a fraction with ``-32600 Invalid Request`` (HTTP 400). The SDK's 2025 transport reads
  such a message as a notification (no valid id) and answers 202 with an empty body, so the
  caller waits for a reply that never comes; MCP requires a string or integer id. A POST whose
  ``Content-Type`` is not ``application/json`` is a 415 in the error shape, as on the REST API
  (the SDK answered a plain-text 400). It also notes the ``clientInfo`` the message carries in the
  request context (``reasoningbank/request_context.py``: the provenance of what the call writes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from reasoningbank.asgi_body import body_read, body_replay
from reasoningbank.http_errors import jsonrpc_error_body
from reasoningbank.request_context import mcp_client_info, request_client_note

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# --- argument validation errors -------------------------------------------------------------------

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "typed_dict_type": "an object",
    "none_required": "null",
    "finite_number": "a finite number",
}


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _field(loc: Sequence[Any]) -> str:
    """``("tags", 0)`` → ``tags[0]``; ``("filters", "tier")`` → ``filters.tier``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "arguments"


def argument_problem(error: Mapping[str, Any], *, tool_call: bool = True) -> str:
    """One pydantic error (``ValidationError.errors()`` item) as a short predicate, never with the
    rejected value (it is the caller's data and may be long or secret)."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    if kind == "less_than":
        return f"must be less than {ctx.get('lt')}"
    if kind == "greater_than":
        return f"must be greater than {ctx.get('gt')}"
    if kind == "string_too_long":
        return f"must be at most {_plural(ctx.get('max_length'), 'character')} long"
    if kind == "string_too_short":
        n = ctx.get("min_length")
        return "must not be empty" if n == 1 else f"must be at least {_plural(n, 'character')} long"
    if kind == "too_long":
        return f"must have at most {_plural(ctx.get('max_length'), 'item')}"
    if kind == "too_short":
        n = ctx.get("min_length")
        return "must not be empty" if n == 1 else f"must have at least {_plural(n, 'item')}"
    if kind in ("literal_error", "enum"):
        return f"must be {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        if "\\u0000" in pattern:  # the contracts' NUL-free (and not-blank) text patterns
            return "must not contain NUL characters" + (" or be only whitespace" if "\\s" in pattern else "")
        if pattern == "\\S":
            return "must not be only whitespace"
        return f"must match the pattern {pattern}"
    if kind == "extra_forbidden":
        return "is not an argument of this tool" if tool_call else "is not a field of this request"
    message = str(error.get("msg") or "is invalid")
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    # pydantic's wording ("Input should be ...") as a predicate of the field
    if message.startswith("Input should"):
        message = "must" + message[len("Input should") :]
    return message[:1].lower() + message[1:]


def arguments_error_text(tool: str, errors: Sequence[Mapping[str, Any]]) -> str:
    """``Invalid arguments for memory_search (nothing was done):`` then one line per problem."""
    lines = []
    for error in errors:
        line = f"- {_field(error.get('loc', ()))}: {argument_problem(error)}."
        if line not in lines:
            lines.append(line)
    return "\n".join([f"Invalid arguments for {tool} (nothing was done):", *lines])


# --- malformed JSON-RPC ids -----------------------------------------------------------------------

INVALID_REQUEST = -32600


_UNREADABLE = object()  # a body that is not JSON: the SDK answers it


def _decoded(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _UNREADABLE


def jsonrpc_id_problem(body: bytes) -> str | None:
    """Why this POST body is not a JSON-RPC message MCP accepts, or None to let the SDK judge it
    (unparsable JSON and every other shape keep the SDK's own answers)."""
    return _message_problem(_decoded(body))


def _message_problem(decoded: Any) -> str | None:
    if decoded is _UNREADABLE:
        return None
    if isinstance(decoded, list):
        return "Invalid Request: batches are not supported; send one JSON-RPC message per POST."
    if not isinstance(decoded, dict) or "id" not in decoded:
        return None
    request_id = decoded["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    if request_id is None:
        kind = "null"
    elif isinstance(request_id, bool):
        kind = "a boolean"
    elif isinstance(request_id, dict):
        kind = "an object"
    elif isinstance(request_id, list):
        kind = "an array"
    else:
        kind = "a fractional number"
    return f"Invalid Request: 'id' must be a string or an integer, not {kind}."


def content_type_problem(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """Why a POST with these headers is not a JSON-RPC message, judged by its ``Content-Type``, or None."""
    value = next((v.decode("latin-1") for k, v in headers if k.lower() == b"content-type"), "")
    media = value.split(";", 1)[0].strip().lower()
    if media == "application/json":
        return None
    shown = repr(media[:60]) if media else "none"
    return f"Unsupported Content-Type {shown}: send a JSON-RPC message as 'Content-Type: application/json'."


class JsonRpcIdMiddleware:
    """Reads a POST's body once, answers a wrong content type or a malformed id itself, and replays
    the body otherwise."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = await body_read(receive)  # read even when refused: the connection is left clean for the next request
        if body is None:  # the client went away
            return
        wrong_type = content_type_problem(scope.get("headers", ()))
        if wrong_type is not None:
            await _send_json(send, 415, jsonrpc_error_body(INVALID_REQUEST, wrong_type, "unsupported_media_type"))
            return
        decoded = _decoded(body)
        problem = _message_problem(decoded)
        if problem is not None:
            await _send_json(send, 400, jsonrpc_error_body(INVALID_REQUEST, problem, "invalid"))
            return
        client = mcp_client_info(decoded)  # read here, where the body is parsed anyway
        if client is not None:
            request_client_note(client[0], client[1], initialize=client[2])
        await self.app(scope, body_replay(body, receive), send)


async def _send_json(send: Send, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})
