"""The MCP endpoint: the official SDK's ``MCPServer`` behind a bearer-token middleware
(docs/decisions.md#mcp-by-the-official-sdk-inside-the-asgi-app).

* ``build_mcp_server()`` builds the ``MCPServer`` and runs every tool module's registrar on it
  (``register_tool_module``): the tool modules are the ``mcp_tools`` modules of the installed apps,
  found by ``reasoningbank.mcp_registry.tool_modules`` — a new tool needs no edit here.
* ``build_mcp_app()`` returns the ASGI app for ``/mcp``: Host/Origin checks (the same hosts as
  Django's ``ALLOWED_HOSTS``) → ``BearerTokenMiddleware`` (``ApiToken`` lookup, 401 otherwise) →
  ``JsonDepthASGI`` (a body nested deeper than ``JSON_MAX_DEPTH`` is a 400) → the SDK's
  ``AuthContextMiddleware`` → ``JsonRpcIdMiddleware`` (malformed ids; notes the ``clientInfo``) →
  ``McpClientMemoryMiddleware`` (an ``initialize``'s client kept for the credential) → the SDK's
  Streamable HTTP app (stateless, JSON responses, both protocol eras). Its lifespan runs the SDK session
  manager, once per instance.
* This module is the composition: the tools live in their apps (``memories/mcp_tools.py``,
  ``consolidation/mcp_tools.py``, and any feature package's ``mcp_tools.py``), the registry, its
  discovery and ``service_errors`` in the kernel (``reasoningbank/mcp_registry.py``), bearer
  authentication in ``accounts/mcp_auth.py``.
"""

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from mcp.types import Tool as MCPTool
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.mcp_auth import BearerTokenMiddleware, McpClientMemoryMiddleware
from reasoningbank.asgi_guards import JsonDepthASGI
from reasoningbank.contracts import name_shown, unknown_name_errors
from reasoningbank.http_errors import JSONRPC_INVALID_REQUEST, jsonrpc_error_body
from reasoningbank.mcp_errors import JsonRpcIdMiddleware, arguments_error_text
from reasoningbank.mcp_registry import tool_registrars
from reasoningbank.request_context import RequestContextASGI
from reasoningbank.text_safety import text_neutralise, value_neutralise
from reasoningbank.tracing import span

MCP_PATH = "/mcp"
SERVER_NAME = "reasoningbank"
SERVER_INSTRUCTIONS = (
    "ReasoningBank is your team's memory of strategies that worked and pitfalls to avoid. "
    "Before a task, call memory_search; after finishing, report memory_outcome for each memory you "
    "used and memory_feedback when one was (not) helpful; record new reusable lessons with memory_record."
)


class ReasoningBankMCPServer(MCPServer):
    """The SDK's server with what every tool module gets without asking (docs/agent-api.md):

    * strict arguments: a call naming an argument its tool does not declare does nothing and answers
      one line per unknown name, with the nearest known one, as REST's 400 does (the SDK would drop
      it silently: ``existing_context`` for ``context`` made a block for an empty context); every
      tool's ``inputSchema`` says ``additionalProperties: false``;
    * argument validation failures worded for agents (one sentence per field,
      reasoningbank/mcp_errors.py) instead of pydantic's dump;
    * results without terminal escapes or bidi controls (reasoningbank/text_safety.py): memory text
      is anyone's text, shown in an agent's terminal and read by its model;
    * an unknown prompt is an ``invalid params`` error, not a logged traceback (this server has none).
    """

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in tools
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            # every tool in one span (the SDK's "tools/call" span around it continues a traceparent
            # from the request's params._meta); the arguments are the caller's content: never recorded
            with span(f"mcp.tool.{name}", **{"mcp.tool.name": name, "mcp.tool.arguments_count": len(arguments)}):
                problems = await self.arguments_check(name, arguments)
                if problems:
                    raise ToolError(problems)
                return _result_neutralise(await super().call_tool(name, arguments, context))
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                # a service's message may quote stored or given text
                raise ToolError(text_neutralise(str(exc))) from cause
            # the cause stays a ValidationError: the SDK then logs the rejected field names only
            raise ToolError(arguments_error_text(name, cause.errors(include_url=False))) from cause

    async def arguments_check(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The answer to a call naming arguments ``name`` does not declare (with the required ones it
        left out), or None. The advertised schema is the reference, whichever way the tool was made."""
        schema = next((tool.input_schema for tool in await super().list_tools() if tool.name == name), None)
        if schema is None:  # an unknown tool: the SDK's answer
            return None
        known = schema.get("properties", {})
        unknown = [key for key in arguments if key not in known]
        if not unknown:
            return None
        missing = [{"type": "missing", "loc": (key,)} for key in schema.get("required", []) if key not in arguments]
        return arguments_error_text(name, [*missing, *unknown_name_errors(unknown, known)])

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            # the SDK raises a bare ValueError, which its dispatcher logs as a crash on every call
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: '{name_shown(name)}'")
        return await super().get_prompt(name, arguments, context)


def _result_neutralise(result: Any) -> Any:
    """A tool's result with every text and structured string neutralised (text_safety)."""
    if not isinstance(result, CallToolResult):
        return result
    content = [
        block.model_copy(update={"text": text_neutralise(block.text)}) if isinstance(block, TextContent) else block
        for block in result.content
    ]
    structured = value_neutralise(result.structured_content) if result.structured_content is not None else None
    return result.model_copy(update={"content": content, "structured_content": structured})


def build_mcp_server() -> MCPServer:
    """A fresh ``MCPServer`` with the tools of every tool module of the installed apps."""
    server: MCPServer = ReasoningBankMCPServer(SERVER_NAME, instructions=SERVER_INSTRUCTIONS, version=_version())
    for registrar in tool_registrars():
        registrar(server)
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reasoningbank")
    except PackageNotFoundError:
        return "0"


# --- hosts and origins -----------------------------------------------------------------------------


def _host_is_wildcard(host: str) -> bool:
    return host == "*" or host.startswith(".")


def transport_security_settings() -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection for the hosts Django serves (``ALLOWED_HOSTS``).

    Exact hosts are allowed with and without a port; their ``http(s)://`` origins and
    ``CSRF_TRUSTED_ORIGINS`` are the allowed browser origins. The SDK matches exact values only, so
    when ``ALLOWED_HOSTS`` holds Django wildcards (``*``, ``.example.com``) or a trusted origin holds
    ``*``, the SDK's check is switched off and ``HostOriginMiddleware`` (Django's own matching,
    always in front of the SDK) is what enforces them.
    """
    hosts = [h.strip().lower() for h in settings.ALLOWED_HOSTS if h.strip()]
    trusted = [o.strip().lower().rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS if o.strip()]
    if any(_host_is_wildcard(h) for h in hosts) or any("*" in o for o in trusted):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []
    for host in hosts:
        allowed_hosts += [host, f"{host}:*"]
        for scheme in ("http", "https"):
            allowed_origins += [f"{scheme}://{host}", f"{scheme}://{host}:*"]
    allowed_origins += trusted
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(allowed_hosts)),
        allowed_origins=list(dict.fromkeys(allowed_origins)),
    )


def _origin_trusted(origin: str, trusted: list[str]) -> bool:
    """Django's CSRF_TRUSTED_ORIGINS matching, including ``https://*.example.com``."""
    parts = urlsplit(origin)
    for entry in trusted:
        entry_parts = urlsplit(entry)
        if entry_parts.scheme != parts.scheme:
            continue
        if entry == origin:
            return True
        if entry_parts.netloc.startswith("*"):
            suffix = entry_parts.netloc[1:]
            if parts.netloc.endswith(suffix):
                return True
    return False


async def _send_refusal(send: Send, status: int, text: str, code: str) -> None:
    """JSON in the error shape, with a JSON-RPC error for MCP clients (reasoningbank/http_errors.py)."""
    body = json.dumps(jsonrpc_error_body(JSONRPC_INVALID_REQUEST, text, code)).encode()
    await send(
        {"type": "http.response.start", "status": status,
         "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    )
    await send({"type": "http.response.body", "body": body})


class HostOriginMiddleware:
    """Rejects a Host outside ``ALLOWED_HOSTS`` (421) or a browser Origin that is neither one of those
    hosts nor in ``CSRF_TRUSTED_ORIGINS`` (403), before any token lookup. Same codes as the SDK."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.allowed_hosts = [h.strip().lower() for h in settings.ALLOWED_HOSTS if h.strip()]
        self.trusted = [o.strip().lower().rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS if o.strip()]

    def _host_ok(self, host: str) -> bool:
        domain, _port = split_domain_port(host.lower())
        return bool(domain) and validate_host(domain, self.allowed_hosts)

    def _origin_ok(self, origin: str) -> bool:
        origin = origin.lower()
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return self._host_ok(parts.netloc) or _origin_trusted(origin, self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._host_ok(host):
            await _send_refusal(send, 421, "Invalid Host header", "invalid_host")
            return
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not self._origin_ok(origin):
            await _send_refusal(send, 403, "Invalid Origin header", "invalid_origin")
            return
        await self.app(scope, receive, send)


# --- the app ---------------------------------------------------------------------------------------


def build_mcp_app(server: MCPServer | None = None) -> ASGIApp:
    """The ASGI app serving ``/mcp``, with its lifespan (the SDK session manager, runs once).

    Build a fresh one per ASGI application instance (and per test).
    """
    server = server or build_mcp_server()
    starlette_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=transport_security_settings(),
    )
    # JsonDepthASGI and JsonRpcIdMiddleware after authentication: an anonymous body is never parsed;
    # the request context (request id, then the org and token prefix authentication notes) around everything;
    # the JSON-RPC reader notes the client's clientInfo, remembered for the calls after an initialize
    return RequestContextASGI(
        HostOriginMiddleware(
            BearerTokenMiddleware(
                JsonDepthASGI(AuthContextMiddleware(JsonRpcIdMiddleware(McpClientMemoryMiddleware(starlette_app))))
            )
        )
    )
