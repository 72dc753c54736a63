"""The MCP endpoint (DESIGN §8): the official SDK's ``MCPServer`` behind a bearer-token middleware.

* ``build_mcp_server()`` builds the ``MCPServer`` and runs every registered tool module on it
  (``register_tool_module``): later tools such as ``session_submit`` and ``memory_consolidate``
  live in their own modules and only need ``@register_tool_module`` plus an import before
  ``build_mcp_app()`` runs.
* ``build_mcp_app()`` returns the ASGI app for ``/mcp``: Host/Origin checks (the same hosts as
  Django's ``ALLOWED_HOSTS``) → ``BearerTokenMiddleware`` (``ApiToken`` lookup, 401 otherwise) →
  the SDK's ``AuthContextMiddleware`` → the SDK's Streamable HTTP app (stateless, JSON responses,
  both protocol eras). Its lifespan runs the SDK session manager, once per instance.
* This module is the composition: the tools live in their apps (``memories/mcp_tools.py``,
  ``consolidation/mcp_tools.py``), the registry and ``service_errors`` in the kernel
  (``reasoningbank/mcp_registry.py``), bearer authentication in ``accounts/mcp_auth.py``.
"""

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.mcp_auth import BearerTokenMiddleware
from reasoningbank.mcp_errors import JsonRpcIdMiddleware, arguments_error_text
from reasoningbank.mcp_registry import tool_registrars
from reasoningbank.request_context import RequestContextASGI
from reasoningbank.tracing import span

MCP_PATH = "/mcp"
SERVER_NAME = "reasoningbank"
SERVER_INSTRUCTIONS = (
    "ReasoningBank is your team's memory of strategies that worked and pitfalls to avoid. "
    "Before a task, call memory_search; after finishing, report memory_outcome for each memory you "
    "used and memory_feedback when one was (not) helpful; record new reusable lessons with memory_record."
)

# Modules imported by ``build_mcp_server`` so that their ``@register_tool_module`` functions run.
TOOL_MODULES: tuple[str, ...] = ("memories.mcp_tools", "consolidation.mcp_tools")


class ReasoningBankMCPServer(MCPServer):
    """The SDK's server, with argument validation failures worded for agents (one sentence per
    field, reasoningbank/mcp_errors.py) instead of pydantic's dump; every tool module benefits."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            # every tool in one span (the SDK's "tools/call" span around it continues a traceparent
            # from the request's params._meta); the arguments are the caller's content: never recorded
            with span(f"mcp.tool.{name}", **{"mcp.tool.name": name, "mcp.tool.arguments_count": len(arguments)}):
                return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            # the cause stays a ValidationError: the SDK then logs the rejected field names only
            raise ToolError(arguments_error_text(name, cause.errors(include_url=False))) from cause


def build_mcp_server() -> MCPServer:
    """A fresh ``MCPServer`` with every registered tool module's tools."""
    import importlib

    for module in TOOL_MODULES:
        importlib.import_module(module)
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


async def _send_plain(send: Send, status: int, text: str) -> None:
    await send(
        {"type": "http.response.start", "status": status,
         "headers": [(b"content-type", b"text/plain; charset=utf-8")]}
    )
    await send({"type": "http.response.body", "body": text.encode()})


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
            await _send_plain(send, 421, "Invalid Host header")
            return
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not self._origin_ok(origin):
            await _send_plain(send, 403, "Invalid Origin header")
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
    # JsonRpcIdMiddleware after authentication: an anonymous body is never parsed; the request
    # context (request id, then the org and token prefix authentication notes) around everything
    return RequestContextASGI(
        HostOriginMiddleware(BearerTokenMiddleware(AuthContextMiddleware(JsonRpcIdMiddleware(starlette_app))))
    )
