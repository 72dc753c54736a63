"""The MCP kernel every app's ``mcp_tools.py`` builds on (docs/architecture.md#the-layers); imports no
app.

* ``register_tool_module`` — a tool module registers ``fn(server)``; ``reasoningbank/mcp_server.py``
  (the composition) runs the registrars of every discovered tool module on each server it builds.
* ``tool_modules`` — the tool modules are found by convention, the way Django finds ``admin.py``:
  every module named ``mcp_tools`` in an installed app, at its top (``memories/mcp_tools.py``) or in
  any of its packages (a feature package's ``memories/<feature>/mcp_tools.py``). A new tool is a
  function in such a module (or a new such module): no list to edit in the kernel, and moving a
  module to another package of its app keeps it served.
* ``service_errors`` — ORM work inside a tool: stale connections closed around it (Django's request
  signals never fire for the MCP app), anticipated failures turned into ``ToolError`` (an
  ``isError`` result with a clear message), a database out of reach (no free pooled connection in
  time) into the documented ``database_unavailable`` with a retry hint.

Who is calling comes from ``accounts/mcp_auth.py`` (``tool_principal``): the tenant only ever comes
from the verified token.
"""

import functools
import importlib
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.apps import apps
from django.db import close_old_connections
from django.http import Http404
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from reasoningbank.errors import InvalidInput, ServiceError
from reasoningbank.middleware import DATABASE_UNAVAILABLE_TOOL_TEXT, database_unavailable

logger = logging.getLogger(__name__)
ToolRegistrar = Callable[[MCPServer], None]
_REGISTRARS: list[ToolRegistrar] = []

TOOL_MODULE = "mcp_tools"  # the module name an app's MCP tools live under
# directories of an app that hold no tool module: not walked (an app like allauth has thousands of files)
SKIPPED_DIRS = frozenset({"migrations", "management", "templates", "static", "locale", "tests", "__pycache__"})


def register_tool_module(fn: ToolRegistrar) -> ToolRegistrar:
    """Register ``fn(server)``, called on every ``MCPServer`` that ``build_mcp_server`` builds.

    Usable as a decorator in a tool module (e.g. ``consolidation/mcp_tools.py``): a module named
    ``mcp_tools`` inside an installed app (``tool_modules``), which is imported before a server is built.
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


def tool_modules() -> tuple[str, ...]:
    """The dotted names of every ``mcp_tools`` module of the installed apps, app by app (in
    ``INSTALLED_APPS`` order), each app's in path order; only modules inside packages count."""
    return _tool_modules_of(tuple((config.name, config.path) for config in apps.get_app_configs()))


@functools.lru_cache(maxsize=8)
def _tool_modules_of(app_paths: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    found: list[str] = []
    for name, path in app_paths:
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith("."))
            if f"{TOOL_MODULE}.py" not in files or "__init__.py" not in files:
                continue
            relative = os.path.relpath(directory, path)
            parts = () if relative == "." else tuple(relative.split(os.sep))
            found.append(".".join((name, *parts, TOOL_MODULE)))
    return tuple(found)


def tool_registrars() -> tuple[ToolRegistrar, ...]:
    """The ``fn(server)`` of every tool module of the installed apps (imported here), in registration
    order; a registrar of a module that is not (or no longer) an installed app's is left out."""
    modules = tool_modules()
    for module in modules:
        importlib.import_module(module)
    return tuple(fn for fn in _REGISTRARS if fn.__module__ in modules)
