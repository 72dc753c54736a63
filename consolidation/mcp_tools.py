"""MCP tool ``memory_consolidate`` (seed 000): consolidate a project now and return the statistics."""

# No ``from __future__ import annotations``: the SDK evaluates tool signatures.

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from accounts.mcp_auth import tool_principal
from accounts.models import SCOPE_CONSOLIDATION_RUN
from reasoningbank.mcp_registry import register_tool_module, service_errors


class ConsolidateResponse(TypedDict):
    created_memories: list[str]
    archived_memories: list[str]
    skipped_count: int
    total_processed: int
    duration_seconds: float
    run_id: str
    status: str
    dry_run: bool  # true: the lists are what a real run *would* create and archive; nothing changed
    # a dry run's proposals, each source with its id, title, created_at and project (empty for a real run)
    preview: dict[str, Any]


@register_tool_module
def register_consolidation_tools(server: MCPServer) -> None:
    from consolidation.runs import consolidation_execute, consolidation_request, project_argument, run_options_validate
    from memories.selectors import project_target

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
        project_id: Annotated[
            str | None,
            Field(description="Project slug to consolidate (only needed when the token reaches several projects)"),
        ] = None,
        similarity_threshold: Annotated[
            float | None,
            Field(
                description=(
                    "Minimum cosine similarity (0.5-0.99) for consolidation; default: the server's "
                    "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD (0.8 unless configured)"
                ),
                ge=0.5,
                le=0.99,
            ),
        ] = None,
        dry_run: Annotated[bool, Field(description="Preview consolidation without making changes")] = False,
        max_clusters: Annotated[
            int, Field(description="Maximum number of clusters to process (0=no limit)", ge=0, le=10000)
        ] = 0,
        force: Annotated[bool, Field(description="Run even if the project was consolidated in the last 24 h")] = False,
        project: Annotated[
            str | None, Field(description="Same as project_id (the name every other tool uses); pass one of them")
        ] = None,
    ) -> ConsolidateResponse:
        with service_errors():
            principal = tool_principal(SCOPE_CONSOLIDATION_RUN)
            target = project_target(principal, project_argument(project=project, project_id=project_id))
            options = run_options_validate(
                similarity_threshold=similarity_threshold, max_clusters=max_clusters, dry_run=dry_run, force=force
            )
            run = consolidation_request(principal=principal, project=target, options=options)
            run = consolidation_execute(run.id) or run
            result = run.result or {}
            return {
                "created_memories": result.get("created_memories", []),
                "archived_memories": result.get("archived_memories", []),
                "skipped_count": result.get("skipped_count", 0),
                "total_processed": result.get("total_processed", 0),
                "duration_seconds": result.get("duration_seconds", 0.0),
                "run_id": run.id,
                "status": run.status,
                "dry_run": run.dry_run,
                "preview": run.preview if run.dry_run else {},
            }
