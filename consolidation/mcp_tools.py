"""MCP tool ``memory_consolidate`` (seed 000): consolidate a project now and return the statistics."""

# No ``from __future__ import annotations``: the SDK evaluates tool signatures.

from typing import Annotated

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from accounts.models import SCOPE_CONSOLIDATION_RUN
from reasoningbank.mcp_server import register_tool_module, service_errors, tool_principal


class ConsolidateResponse(TypedDict):
    created_memories: list[str]
    archived_memories: list[str]
    skipped_count: int
    total_processed: int
    duration_seconds: float
    run_id: str
    status: str


@register_tool_module
def register_consolidation_tools(server: MCPServer) -> None:
    from consolidation.services import consolidation_execute, consolidation_request, run_options_validate
    from memories.selectors import project_resolve

    @server.tool(
        description=(
            "Consolidate similar memories to reduce redundancy and improve knowledge quality. Merges memories "
            "with similarity above threshold into synthesized consolidated memories."
        ),
        annotations=ToolAnnotations(
            title="Consolidate memories",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    def memory_consolidate(
        project_id: Annotated[str, Field(description="Project ID to consolidate memories for (the project's slug)")],
        similarity_threshold: Annotated[
            float, Field(description="Minimum cosine similarity (0.0-1.0) for consolidation", ge=0.5, le=0.99)
        ] = 0.8,
        dry_run: Annotated[bool, Field(description="Preview consolidation without making changes")] = False,
        max_clusters: Annotated[
            int, Field(description="Maximum number of clusters to process (0=no limit)", ge=0, le=10000)
        ] = 0,
        force: Annotated[bool, Field(description="Run even if the project was consolidated in the last 24 h")] = False,
    ) -> ConsolidateResponse:
        with service_errors():
            principal = tool_principal(SCOPE_CONSOLIDATION_RUN)
            project = project_resolve(principal, project_id)
            options = run_options_validate(
                similarity_threshold=similarity_threshold, max_clusters=max_clusters, dry_run=dry_run, force=force
            )
            run = consolidation_request(principal=principal, project=project, options=options)
            run = consolidation_execute(run.id) or run
            return {**run.result, "run_id": run.id, "status": run.status}  # type: ignore[typeddict-item]
