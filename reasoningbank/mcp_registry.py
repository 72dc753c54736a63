"""The MCP kernel every app's ``mcp_tools.py`` builds on (DESIGN §3, §8); imports no app.

* ``register_tool_module`` — an app registers ``fn(server)``; ``reasoningbank/mcp_server.py`` (the
  composition) imports the apps' tool modules and runs every registrar on each server it builds.
* ``service_errors`` — ORM work inside a tool: stale connections closed around it (Django's request
  signals never fire for the MCP app), anticipated failures turned into ``ToolError`` (an
  ``isError`` result with a clear message), a database out of reach (no free pooled connection in
  time) into the documented ``database_unavailable`` with a retry hint.

Who is calling comes from ``accounts/mcp_auth.py`` (``tool_principal``): the tenant only ever comes
from the verified token.
"""

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import close_old_connections
from django.http import Http404
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from reasoningbank.errors import InvalidInput, ServiceError
from reasoningbank.middleware import DATABASE_UNAVAILABLE_TOOL_TEXT, database_unavailable

logger = logging.getLogger(__name__)
ToolRegistrar = Callable[[MCPServer], None]
_REGISTRARS: list[ToolRegistrar] = []


def register_tool_module(fn: ToolRegistrar) -> ToolRegistrar:
    """Register ``fn(server)``, called on every ``MCPServer`` that ``build_mcp_server`` builds.

    Usable as a decorator in another module (e.g. ``consolidation/mcp_tools.py``); that module must be
    imported before the app is built (``TOOL_MODULES`` in ``reasoningbank/mcp_server.py``).
    """
    if fn not in _REGISTRARS:
        _REGISTRARS.append(fn)
    return fn


@contextmanager
def service_errors() -> Iterator[None]:
    """ORM work inside a tool: stale connections closed around it (Django's request signals never
    fire for the MCP app), anticipated failures turned into ``ToolError`` with their message, and a
    database that cannot be reached into ``database_unavailable`` (``reasoningbank/middleware.py``)."""
    close_old_connections()
    try:
        yield
    except InvalidInput as exc:
        if exc.field:  # named the way argument errors are (reasoningbank.mcp_errors): one line per field
            raise ToolError(f"Invalid {exc.field} (nothing was done):\n- {exc.field}: {exc.message}") from exc
        raise ToolError(exc.message) from exc
    except ServiceError as exc:
        raise ToolError(exc.message) from exc
    except Http404:
        raise ToolError("not found") from None
    except Exception as exc:
        # no pooled connection in time (the pool exhausted under load) or the database gone: the
        # documented database_unavailable with its retry hint, as REST's 503 says, not a crash
        if not database_unavailable(exc):
            raise
        logger.warning("database unavailable: an MCP tool call answered database_unavailable (%s)", exc)
        raise ToolError(DATABASE_UNAVAILABLE_TOOL_TEXT) from exc
    finally:
        close_old_connections()


def tool_registrars() -> tuple[ToolRegistrar, ...]:
    """Every registered ``fn(server)``, in registration order."""
    return tuple(_REGISTRARS)
