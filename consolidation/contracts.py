"""The consolidate operation's contract (``memory_consolidate``, docs/consolidation.md#what-starts-a-run):
one input model, one output model and ``memory_consolidate_run``, shared by the MCP tool
(``consolidation/mcp_tools.py``) and ``POST /api/v1/consolidation/runs`` (``consolidation/api.py``).

The MCP tool always runs the consolidation before answering (it returns the run's figures); REST adds
one transport option, ``wait`` (default false: answer 202 at once with the queued run and let the worker
run it).
"""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from pydantic import ConfigDict, Field, StringConstraints, ValidationInfo, field_validator, model_validator

from accounts.access import Principal
from consolidation.models import ConsolidationRun
from consolidation.run_state import RunOptions
from consolidation.runs import consolidation_enqueue, consolidation_execute, consolidation_request, project_argument
from consolidation.selectors import run_get
from memories.reads import project_target
from reasoningbank.contracts import NUL_FREE, Contract

Slug = Annotated[str | None, StringConstraints(strip_whitespace=True, max_length=200, pattern=NUL_FREE)]


class ConsolidateInput(Contract):
    project_id: Annotated[
        Slug, Field(description="Project slug to consolidate (only needed when the token reaches several projects)")
    ] = None
    similarity_threshold: Annotated[
        float | None,
        Field(
            description=(
                "Minimum cosine similarity (0.5-0.99) for consolidation; left out: the server's "
                "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD"
            ),
            ge=0.5,
            le=0.99,
        ),
    ] = None
    dry_run: Annotated[bool, Field(description="Preview consolidation without making changes")] = False
    max_clusters: Annotated[
        int, Field(description="Maximum number of clusters to process (0=no limit)", ge=0, le=10_000)
    ] = 0
    # Kept so that agents and scripts written when an explicit request could be skipped as "within the
    # 24 h window" still validate; every explicit request runs now (docs/consolidation.md#what-starts-a-run).
    force: Annotated[
        bool,
        Field(
            description="Deprecated, no effect: an explicit request always runs (the 24 h interval is the "
            "scheduler's). Accepted so that older callers keep working",
            deprecated=True,
        ),
    ] = False
    project: Annotated[
        Slug, Field(description="Same as project_id (the name every other tool uses); pass one of them")
    ] = None

    @field_validator("project")
    @classmethod
    def _one_project_name(cls, project: str | None, info: ValidationInfo) -> str | None:
        # two names for one field: both at once is ambiguous even when they agree
        project_id = info.data.get("project_id")
        if project is not None and project_id is not None:
            differ = f"names another project than project_id ({project!r}, {project_id!r}); " if (
                project != project_id
            ) else ""
            raise ValueError(f"{differ}pass project or project_id, not both")
        return project

    def options(self) -> RunOptions:
        return RunOptions(
            similarity_threshold=float(
                settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD
                if self.similarity_threshold is None
                else self.similarity_threshold
            ),
            max_clusters=self.max_clusters,
            dry_run=self.dry_run,
        )


class ConsolidateRestInput(ConsolidateInput):
    # a REST body holds only what the client sent: both names present is ambiguous even when null,
    # and the schema says so (an MCP call always carries every parameter, so only values count there)
    model_config = ConfigDict(json_schema_extra={"not": {"required": ["project", "project_id"]}})

    @model_validator(mode="before")
    @classmethod
    def _both_names_sent(cls, data: Any) -> Any:
        if isinstance(data, dict) and "project" in data and "project_id" in data:
            # null counts as sent: let the field validator name the clash
            data = {**data, **{k: "" for k in ("project", "project_id") if data[k] is None}}
        return data

    wait: Annotated[
        bool, Field(description="Run now and answer when done (else 202 at once; poll the run)")
    ] = False


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


class ConsolidateOutput(Contract):
    """The run (as `GET /api/v1/consolidation/runs/{id}` shows it) with the consolidation statistics at
    the top level. For a dry run the lists are what a real run would create and archive, and `preview` holds
    its proposals; nothing changed."""

    # what a run reports (docs/consolidation.md#what-a-run-reports)
    created_memories: list[str]
    archived_memories: list[str]
    skipped_count: int
    total_processed: int
    duration_seconds: float
    run_id: str = Field(description="the run's id (`run_…`), the same as `id`")
    # the run
    id: str
    project: str | None
    trigger: str
    status: str
    dry_run: bool = Field(description="a preview: nothing was or will be changed")
    options: dict[str, Any]
    phase: str
    progress: float = Field(description="0 to 1")
    counters: dict[str, Any]
    phase_durations: dict[str, Any]
    warnings: list[Any]
    errors: list[Any]
    preview: dict[str, Any] = Field(description="what a dry run would do")
    result: dict[str, Any] = Field(description="created and archived memories, when finished")
    llm_calls: int
    llm_input_tokens: int
    llm_output_tokens: int
    created_at: str
    started_at: str | None
    finished_at: str | None

    @classmethod
    def of(cls, run: ConsolidationRun) -> ConsolidateOutput:
        result = dict(run.result or {})
        return cls(
            created_memories=list(result.get("created_memories", [])),
            archived_memories=list(result.get("archived_memories", [])),
            skipped_count=int(result.get("skipped_count", 0)),
            total_processed=int(result.get("total_processed", 0)),
            duration_seconds=float(result.get("duration_seconds", 0.0)),
            run_id=run.id, id=run.id, project=run.project.slug if run.project is not None else None,
            trigger=run.trigger, status=run.status, dry_run=run.dry_run, options=dict(run.options or {}),
            phase=run.phase, progress=float(run.progress), counters=dict(run.counters or {}),
            phase_durations=dict(run.phase_durations or {}), warnings=list(run.warnings or []),
            errors=list(run.errors or []), preview=dict(run.preview or {}), result=result,
            llm_calls=run.llm_calls, llm_input_tokens=run.llm_input_tokens, llm_output_tokens=run.llm_output_tokens,
            created_at=run.created_at.isoformat(), started_at=_iso(run.started_at), finished_at=_iso(run.finished_at),
        )


def memory_consolidate_run(principal: Principal, args: ConsolidateInput, *, wait: bool = True) -> ConsolidateOutput:
    """Request a run; with ``wait`` run it here and answer its statistics, else queue it for the worker."""
    target = project_target(principal, project_argument(project=args.project, project_id=args.project_id))
    run = consolidation_request(principal=principal, project=target, options=args.options())
    if wait:
        run = consolidation_execute(run.id) or run_get(principal, run.id)
    else:
        consolidation_enqueue(run)
    return ConsolidateOutput.of(run)
