"""The MCP tool modules are found by convention (reasoningbank/mcp_registry.py): every module named
``mcp_tools`` of an installed app, at its top or in any of its packages, is served — so a new tool,
or a tool module moved into a feature package, needs no edit in the kernel."""

from __future__ import annotations

import sys
import textwrap

import anyio
import pytest
from django.test import modify_settings

from reasoningbank.mcp_registry import tool_modules
from reasoningbank.mcp_server import build_mcp_server

PROBE_TOOLS = """
from reasoningbank.mcp_registry import register_tool_module


@register_tool_module
def register(server):
    @server.tool(name="{name}", description="a tool of a feature package, found by convention")
    def probe() -> str:
        return "pong"
"""


@pytest.fixture
def probe_app(tmp_path, monkeypatch):
    """An app ``probe_app`` with tool modules at its top and in a feature package, and one that is no
    tool module (a ``migrations`` folder is never one)."""
    root = tmp_path / "probe_app"
    for package, name in ((root, "probe_top"), (root / "feature", "probe_feature")):
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text("")
        (package / "mcp_tools.py").write_text(textwrap.dedent(PROBE_TOOLS.format(name=name)))
    (root / "migrations").mkdir()
    (root / "migrations" / "__init__.py").write_text("")
    (root / "migrations" / "mcp_tools.py").write_text("raise AssertionError('not a tool module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "probe_app"
    for name in [m for m in sys.modules if m == "probe_app" or m.startswith("probe_app.")]:
        del sys.modules[name]


def served() -> set[str]:
    return {tool.name for tool in anyio.run(build_mcp_server().list_tools)}


def test_the_apps_tool_modules_are_found_where_they_live():
    assert {"memories.mcp_tools", "consolidation.mcp_tools"} <= set(tool_modules())


def test_a_new_apps_tool_modules_are_served_wherever_they_sit_in_it(probe_app):
    before = served()
    with modify_settings(INSTALLED_APPS={"append": probe_app}):
        assert tool_modules()[-2:] == ("probe_app.mcp_tools", "probe_app.feature.mcp_tools")
        assert served() == before | {"probe_top", "probe_feature"}
    # an app that is no longer installed serves nothing, though its modules stay imported
    assert served() == before
