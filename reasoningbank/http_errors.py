"""One error shape for every machine-facing answer: ``{"detail": str, "code": str, "errors": {field: [str]}}``.

The REST API has always answered its errors so (``reasoningbank/api_errors.py``). The other two
machine-facing areas speak protocols with error members of their own, so their answers carry the
same three keys *and* what their clients read:

* ``/oauth/`` (token, revocation, registration; RFC 6749 section 5.2, RFC 7591 section 3.2.2) and
  ``/.well-known/`` (the OAuth metadata documents): ``error`` and ``error_description`` too
  (``oauth_error_body``);
* ``/mcp``, refusals made before the MCP SDK sees the request (too large, too deeply nested, no
  length): a JSON-RPC error envelope too (``jsonrpc_error_body``), which the SDK's client surfaces
  as the call's error; its 401/429 are OAuth-style (``oauth_error_body``) like every MCP server's.
  Errors the SDK itself answers (a malformed message, an unknown method) stay JSON-RPC, with the
  shape's keys added on the way out (``reasoningbank/asgi_errors.py``).

``refusal_body`` picks the flavour from the request path; dashboard pages (``page``) get HTML from
their callers instead. No Django here: the ASGI guards use it before Django runs.
"""

from __future__ import annotations

from typing import Any, Literal

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

Area = Literal["api", "oauth", "mcp", "page"]

API_PREFIX = "/api/"
OAUTH_PREFIX = "/oauth/"
# the OAuth metadata documents, and whatever else a client looks for there (RFC 8615)
WELL_KNOWN_PREFIX = "/.well-known/"
MCP_PATH = "/mcp"
# the authorization endpoint is a page the user's browser navigates to (sign-in, consent), not an API
OAUTH_PAGE_PREFIX = "/oauth/authorize/"

# a 401 for a request without credentials, on /mcp and /api/ alike (docs/agent-api.md#authentication-errors)
MISSING_BEARER_TOKEN = "Missing bearer token: send 'Authorization: Bearer <token>'."

# JSON-RPC 2.0 error codes for the refusals made before the SDK parses a message
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_INTERNAL_ERROR = -32603


def _under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or below it (``/api`` and ``/api/...``, never ``/apiary``)."""
    return path.startswith(prefix) or path == prefix.rstrip("/")


def area_for_path(path: str) -> Area:
    """Which kind of client a path serves, hence which error flavour it answers with: everything under
    ``/api/``, ``/mcp``, ``/oauth/`` and ``/.well-known/`` is for programs (JSON errors), except the
    authorization page; the rest is the dashboard's (HTML)."""
    if _under(path, API_PREFIX):
        return "api"
    if _under(path, MCP_PATH + "/"):
        return "mcp"
    if path.startswith(OAUTH_PAGE_PREFIX):
        return "page"
    if _under(path, OAUTH_PREFIX) or _under(path, WELL_KNOWN_PREFIX):
        return "oauth"
    return "page"


def error_body(detail: str, code: str, errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"detail": detail, "code": code, "errors": errors or {}}


def oauth_error_body(
    error: str, description: str, *, code: str | None = None, errors: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """RFC 6749's ``error`` / ``error_description`` and the shape's three keys (``code`` is the OAuth
    ``error`` unless a more specific code of ours is given)."""
    return {"error": error, "error_description": description, **error_body(description, code or error, errors)}


def jsonrpc_error_body(
    jsonrpc_code: int, detail: str, code: str, errors: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """A JSON-RPC error answering no particular request (``id`` null) and the shape's three keys."""
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": jsonrpc_code, "message": detail},
        **error_body(detail, code, errors),
    }


def refusal_body(
    path: str,
    detail: str,
    code: str,
    errors: dict[str, list[str]] | None = None,
    *,
    oauth_error: str = "invalid_request",
    jsonrpc_code: int = JSONRPC_INVALID_REQUEST,
) -> dict[str, Any] | None:
    """The JSON body refusing a request to ``path`` in that area's flavour, or None for a page."""
    area = area_for_path(path)
    if area == "api":
        return error_body(detail, code, errors)
    if area == "oauth":
        return oauth_error_body(oauth_error, detail, code=code, errors=errors)
    if area == "mcp":
        return jsonrpc_error_body(jsonrpc_code, detail, code, errors)
    return None
