"""MCP tool ``memory_consolidate``: consolidate a project now and return the statistics —
the consolidate contract (``consolidation/contracts.py``), the same body as ``POST
/api/v1/consolidation/runs`` with ``wait: true``."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

from accounts.mcp_auth import tool_principal
from accounts.models import SCOPE_CONSOLIDATION_RUN
from consolidation.contracts import ConsolidateInput, ConsolidateOutput, memory_consolidate_run
from reasoningbank.contracts import contract_tool
from reasoningbank.mcp_registry import register_tool_module, service_errors


def _consolidate(args: ConsolidateInput) -> ConsolidateOutput:
    with service_errors():
        return memory_consolidate_run(tool_principal(SCOPE_CONSOLIDATION_RUN), args)


@register_tool_module
def register_consolidation_tools(server: MCPServer) -> None:
    contract_tool(
        server, name="memory_consolidate",
        description=(
            "Consolidate similar memories to reduce redundancy and improve knowledge quality. Merges memories "
            "with similarity above threshold into synthesized consolidated memories."
        ),
        annotations=ToolAnnotations(
            title="Consolidate memories", read_only_hint=False, destructive_hint=False, idempotent_hint=True,
            open_world_hint=False,
        ),
        input_model=ConsolidateInput, output_model=ConsolidateOutput, run=_consolidate,
    )
