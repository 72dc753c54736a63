"""The consolidation cycle (seeds 000, 002, 003, 004; DESIGN §5, §10) and its triggers.

One run = scan → duplicate merge (≥ 0.95, no LLM) → retention & tiers → clustering (≥ threshold)
→ LLM synthesis per cluster → contradiction / supersession checks → patterns & promotion → stale
archival. Each cluster's merge (create + archive + links) is its own transaction, so a failing or
crashing run never leaves a half-archived cluster, and re-running only picks up what is left.
Nothing is ever deleted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.access import Principal, system_principal
from accounts.models import SCOPE_CONSOLIDATION_RUN, Organization, Project
from accounts.plans import FEATURE_CONSOLIDATION_MANUAL, FEATURE_CONSOLIDATION_SCHEDULED, minimum_plan_for
from accounts.services import audit_record
from consolidation import clustering, graph_slices, retention
from consolidation import prompts as cprompts
from consolidation import signals as events
from consolidation.models import ConsolidationRun, NeighbourGraph, ProjectConsolidationSettings, empty_counters
from consolidation.selectors import (
    NEIGHBOURS_PER_MEMORY,
    Edge,
    ScannedMemory,
    memories_scan,
    neighbour_edges,
    neighbour_graph_get,
    stored_edges,
)
from memories import confidence as conf
from memories.models import Memory, MemoryLink
from memories.services import MemoryDraft, _embed, memories_create, memory_embedding_text
from reasoningbank.ai.llm import LLMError, llm_from_settings
from reasoningbank.ai.metered import llm_complete
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, PlanRequired

logger = logging.getLogger("consolidation")

DUPLICATE_THRESHOLD = 0.95
CONTRADICTION_BAND = (0.7, 0.95)
MAX_JUDGED_PAIRS = 50  # LLM judge calls per run (contradiction + supersession)
STALE_RETENTION = 0.1
RETENTION_WRITE_DELTA = 0.05  # stored retention is refreshed when it moved at least this much
STALE_IDLE_DAYS = 30
PATTERN_WINDOW_DAYS = 7
WORKING_TTL = timedelta(minutes=30)
# memories created or changed this long before the stored graph's run started are probed again:
# created_at/updated_at are stamped by other processes whose clocks may lag the worker's
GRAPH_CLOCK_MARGIN = timedelta(minutes=5)
# an approximate index misses a few percent of the edges in any one pass, and an incremental
# run never looks for them again: each memory is probed again this long after its last probe,
# a slice of the project a day (consolidation.graph_slices)
GRAPH_REPROBE_AFTER = timedelta(days=7)
PHASES = ("scan", "duplicates", "retention", "judge", "cluster", "synthesize", "patterns", "archive", "completed")


@dataclass(frozen=True)
class RunOptions:
    similarity_threshold: float = 0.8
    max_clusters: int = 0  # 0 = no limit (seed 000)
    dry_run: bool = False
    force: bool = False  # bypass the 24 h window (seed 000 ForceAll)
    min_cluster_size: int = clustering.DEFAULT_MIN_CLUSTER_SIZE
    max_cluster_size: int = clustering.DEFAULT_MAX_CLUSTER_SIZE

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_options_validate(
    *, similarity_threshold: Any = None, max_clusters: Any = 0, dry_run: Any = False, force: Any = False
) -> RunOptions:
    threshold = (
        settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD if similarity_threshold is None else similarity_threshold
    )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.5 <= threshold <= 0.99:
        raise InvalidInput("similarity_threshold must be a number from 0.5 to 0.99", field="similarity_threshold")
    if isinstance(max_clusters, bool) or not isinstance(max_clusters, int) or not 0 <= max_clusters <= 10_000:
        raise InvalidInput("max_clusters must be an integer from 0 (no limit) to 10000", field="max_clusters")
    for name, value in (("dry_run", dry_run), ("force", force)):
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true or false", field=name)
    return RunOptions(similarity_threshold=float(threshold), max_clusters=max_clusters, dry_run=dry_run, force=force)


def project_argument(*, project: str | None, project_id: str | None) -> str | None:
    """The slug a request names: ``project`` (every other tool's name) or seed 000's ``project_id``;
    None when neither is given (``memories.selectors.project_target`` then picks the only one)."""
    project, project_id = (project or "").strip() or None, (project_id or "").strip() or None
    if project and project_id and project != project_id:
        raise InvalidInput(
            f"project {project!r} and project_id {project_id!r} name different projects: pass one of them",
            field="project",
        )
    return project or project_id


# --- triggers --------------------------------------------------------------------------------------


def consolidation_request(
    *,
    principal: Principal,
    project: Project | None,
    options: RunOptions,
    trigger: str = ConsolidationRun.TRIGGER_MANUAL,
) -> ConsolidationRun:
    """Create a run (queued). Gates: manual needs Pro, automatic needs Teams; one active run per project.
    ``project`` None (no slug, and the token reaches several projects) is a clear 4xx."""
    if project is None:
        raise InvalidInput("project_id is required: the slug of the project to consolidate", field="project_id")
    org = principal.organization
    if trigger == ConsolidationRun.TRIGGER_MANUAL:
        if not principal.has_scope(SCOPE_CONSOLIDATION_RUN):
            raise Forbidden(f"running consolidation needs the '{SCOPE_CONSOLIDATION_RUN}' scope")
        _require_feature(org, FEATURE_CONSOLIDATION_MANUAL, "manual consolidation")
    else:
        _require_feature(org, FEATURE_CONSOLIDATION_SCHEDULED, "automatic consolidation")
    # a run left behind by a dead worker must not block this request (issue 11 item 12)
    runs_recover_stale(project=project)
    try:
        with transaction.atomic():
            run = ConsolidationRun.objects.create(
                organization=org,
                project=project,
                trigger=trigger,
                options=options.as_dict(),
                dry_run=options.dry_run,
                requested_by_token=principal.token,
                requested_by_user=principal.user,
            )
            audit_record(
                organization=org,
                actor=principal,
                verb="consolidation.request",
                target=run,
                data={"project": project.slug, "trigger": trigger, **options.as_dict()},
            )
    except IntegrityError:
        active = ConsolidationRun.objects.filter(project=project, status__in=["queued", "running"]).first()
        waiting = (
            f"; it is failed if no worker picks it up within {_minutes(settings.CONSOLIDATION_QUEUE_TIMEOUT)}"
            if active is not None and active.status == ConsolidationRun.STATUS_QUEUED
            else ""
        )
        raise Conflict(
            f"a consolidation run for {project.slug!r} is already {active.status if active else 'active'}"
            + (f" ({active.id}{waiting})" if active else ""),
            field="project_id",
        ) from None
    return run


def _require_feature(org: Organization, feature: str, what: str) -> None:
    if not org.has_feature(feature):
        raise PlanRequired(
            f"{what} needs the {minimum_plan_for(feature)} plan or above; this organization is on {org.plan}"
        )


def consolidation_enqueue(run: ConsolidationRun) -> None:
    from django_q.tasks import async_task

    transaction.on_commit(
        lambda: async_task("consolidation.tasks.consolidation_run_task", run.id, task_name=f"consolidate {run.id}")
    )


def last_completed_run(project: Project) -> ConsolidationRun | None:
    return (
        ConsolidationRun.objects.filter(project=project, status=ConsolidationRun.STATUS_COMPLETED, dry_run=False)
        .order_by("-started_at")
        .first()
    )


# --- the cycle -------------------------------------------------------------------------------------


class RunTimeout(Exception):
    pass


@dataclass
class _Context:
    run: ConsolidationRun
    project: Project
    options: RunOptions
    principal: Principal
    llm: Any
    started: float
    deadline: float
    now: Any
    counters: dict[str, int] = field(default_factory=empty_counters)
    preview: dict[str, list[Any]] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    since: Any = None  # start of the last completed run: "new" memories are newer than this

    @property
    def dry(self) -> bool:
        return self.options.dry_run

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise RunTimeout(f"run exceeded its {settings.CONSOLIDATION_RUN_TIMEOUT / 60:.0f}-minute limit")

    def note(self, key: str, item: Any) -> None:
        self.preview.setdefault(key, []).append(item)


def run_claim(run_id: str) -> ConsolidationRun | None:
    now = timezone.now()
    claimed = ConsolidationRun.objects.filter(pk=run_id, status=ConsolidationRun.STATUS_QUEUED).update(
        status=ConsolidationRun.STATUS_RUNNING, started_at=now, heartbeat_at=now, phase="scan"
    )
    if not claimed:
        return None
    return ConsolidationRun.objects.select_related("organization", "project", "requested_by_token").get(pk=run_id)


def consolidation_execute(run_id: str, *, llm: Any = None) -> ConsolidationRun | None:
    """Run one queued consolidation run to the end. Returns None if another worker has it."""
    run = run_claim(run_id)
    if run is None:
        return None
    options = RunOptions(**run.options)
    project = run.project
    assert project is not None
    window_start = timezone.now() - timedelta(seconds=settings.CONSOLIDATION_WINDOW)
    previous = last_completed_run(project)
    since = previous.started_at if previous is not None else None
    if previous is not None and since is not None and since >= window_start and not (options.force or options.dry_run):
        return _run_finish(
            run,
            ConsolidationRun.STATUS_SKIPPED,
            counters=empty_counters(),
            preview={},
            warnings=[
                f"consolidated {timezone.now() - since} ago ({previous.id}); within the "
                f"{settings.CONSOLIDATION_WINDOW / 3600:.0f} h window — pass force to run anyway"
            ],
            errors=[],
            durations={},
            created=[],
            archived=[],
        )
    principal = Principal(
        organization=run.organization,
        scopes=system_principal(run.organization).scopes,
        token=run.requested_by_token,
        user=run.requested_by_user,
    )
    started = time.monotonic()
    ctx = _Context(
        run=run,
        project=project,
        options=options,
        principal=principal,
        llm=llm,
        started=started,
        deadline=started + settings.CONSOLIDATION_RUN_TIMEOUT,
        now=timezone.now(),
        since=previous.started_at if previous else None,
    )
    status = ConsolidationRun.STATUS_COMPLETED
    try:
        memories = _phase(ctx, "scan", _scan)
        # duplicates before retention: the memories merged away as duplicates need no new tier
        # (on a freshly loaded bank that is ~12% fewer rows rewritten)
        edges = _phase(ctx, "duplicates", lambda c: _duplicates(c, memories))
        _phase(ctx, "retention", lambda c: _retention(c, memories))
        # judged before clustering: a contradicting pair above the cluster threshold must be
        # flagged for a moderator, not blended into one synthesized memory
        _phase(ctx, "judge", lambda c: _judge(c, edges, memories))
        clusters = _phase(ctx, "cluster", lambda c: _cluster(c, memories, edges))
        _phase(ctx, "synthesize", lambda c: _synthesize(c, clusters))
        _phase(ctx, "patterns", _patterns)
        _phase(ctx, "archive", lambda c: _archive_stale(c, memories))
    except RunTimeout as exc:
        status = ConsolidationRun.STATUS_FAILED
        ctx.errors.append(str(exc))
    except Exception as exc:  # a bug or a database error: record it, keep what committed
        logger.exception("consolidation run %s failed", run.id)
        status = ConsolidationRun.STATUS_FAILED
        ctx.errors.append(f"{type(exc).__name__}: {exc}")
    finished = _run_finish(
        run,
        status,
        counters=ctx.counters,
        preview=ctx.preview,
        warnings=ctx.warnings,
        errors=ctx.errors,
        durations=ctx.durations,
        created=ctx.created,
        archived=ctx.archived,
    )
    events.run_completed.send(sender=ConsolidationRun, run=finished)
    return finished


def _phase(ctx: _Context, name: str, fn: Callable[[_Context], Any]) -> Any:
    ctx.check_time()
    ConsolidationRun.objects.filter(pk=ctx.run.pk).update(
        phase=name,
        progress=PHASES.index(name) / (len(PHASES) - 1),
        heartbeat_at=timezone.now(),
        counters=ctx.counters,
    )
    started = time.perf_counter()
    try:
        return fn(ctx)
    finally:
        ctx.durations[name] = round(time.perf_counter() - started, 4)


def _run_finish(
    run: ConsolidationRun,
    status: str,
    *,
    counters: dict[str, int],
    preview: dict[str, Any],
    warnings: list[str],
    errors: list[str],
    durations: dict[str, float],
    created: list[str],
    archived: list[str],
) -> ConsolidationRun:
    now = timezone.now()
    run.status = status
    run.phase = "completed" if status == ConsolidationRun.STATUS_COMPLETED else run.phase or ""
    run.progress = (
        1.0 if status in (ConsolidationRun.STATUS_COMPLETED, ConsolidationRun.STATUS_SKIPPED) else run.progress
    )
    run.counters, run.preview, run.warnings, run.errors = counters, preview, warnings, errors
    run.phase_durations = durations
    run.finished_at = now
    run.started_at = run.started_at or now
    calls = run.llm_call_log.all()
    run.llm_calls = calls.count()
    run.llm_input_tokens = sum(c.input_tokens for c in calls)
    run.llm_output_tokens = sum(c.output_tokens for c in calls)
    run.result = {
        "created_memories": created,
        "archived_memories": archived,
        "skipped_count": counters.get("skipped", 0),
        "total_processed": counters.get("processed", 0),
        "duration_seconds": round((now - run.started_at).total_seconds(), 2),
        # a dry run's lists are proposals: say so wherever the result goes (MCP, REST, dashboard)
        "dry_run": run.dry_run,
    }
    run.save()
    logger.info(
        (
            "Consolidation dry run %s run=%s project=%s would create=%d would archive=%d duration=%.1fs"
            if run.dry_run
            else "Consolidation %s run=%s project=%s created=%d archived=%d duration=%.1fs"
        ),
        status,
        run.id,
        run.project.slug if run.project else "-",
        len(created),
        len(archived),
        run.result["duration_seconds"],
    )
    return run


# --- phases ----------------------------------------------------------------------------------------


def _scan(ctx: _Context) -> dict[str, ScannedMemory]:
    memories = memories_scan(organization_id=ctx.run.organization_id, project_id=ctx.project.id)
    ctx.counters["processed"] = len(memories)
    return memories


def _retention(ctx: _Context, memories: dict[str, ScannedMemory]) -> None:
    """Seed 002 retention score + tier for every memory (the daily decay), vectorised; one bulk
    UPDATE of the rows whose score or tier moved."""
    if not memories:
        return
    superseded = set(
        MemoryLink.objects.filter(
            organization_id=ctx.run.organization_id, kind=MemoryLink.KIND_SUPERSEDES, target__project=ctx.project
        ).values_list("target_id", flat=True)
    )
    rows = list(memories.values())
    now = ctx.now.timestamp()
    created = np.fromiter((m.created for m in rows), dtype=np.float64, count=len(rows))
    last_access = np.fromiter((m.last_access for m in rows), dtype=np.float64, count=len(rows))
    scores = retention.retention_scores(
        age_days=(now - created) / 86400,
        access_age_days=(now - last_access) / 86400,
        activation_counts=np.fromiter((m.usage_count for m in rows), dtype=np.float64, count=len(rows)),
        importances=np.fromiter((m.importance for m in rows), dtype=np.float64, count=len(rows)),
        superseded=np.fromiter((m.id in superseded for m in rows), dtype=bool, count=len(rows)),
    )
    # salience for stale archival (seed 004): the usage-driven part only. Importance keeps a
    # memory warm in tiers, but must not make an unused memory unarchivable forever.
    config = retention.DEFAULT_RETENTION_CONFIG
    salience = config.recency_weight * scores.recency + config.activation_weight * scores.activation
    old_tiers = np.array([m.tier for m in rows], dtype=object)
    old_scores = np.fromiter((m.retention for m in rows), dtype=np.float64, count=len(rows))
    tier_moved = scores.tiers.astype(object) != old_tiers
    # write only what moved: rewriting every row each run would churn the table for nothing
    moved = np.flatnonzero(tier_moved | (np.abs(scores.overall - old_scores) >= RETENTION_WRITE_DELTA))
    ctx.counters["tier_transitions"] = int(tier_moved.sum())
    overall, tiers, salience_list = scores.overall.tolist(), scores.tiers.tolist(), salience.tolist()
    for memory, score, tier, value in zip(rows, overall, tiers, salience_list, strict=True):
        memory.retention, memory.tier, memory.salience = score, tier, value
    if ctx.dry or not len(moved):
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory m SET retention = v.r, tier = v.t "
            "FROM unnest(%s::text[], %s::float8[], %s::text[]) AS v(id, r, t) WHERE m.id = v.id",
            [[rows[i].id for i in moved], [overall[i] for i in moved], [tiers[i] for i in moved]],
        )


def _duplicates(ctx: _Context, memories: dict[str, ScannedMemory]) -> list[Edge]:
    """Seed 004: groups ≥ 0.95 merge without an LLM — the strongest stays, the rest are archived as
    duplicates with a ``duplicates`` link. Returns the neighbour graph for the later phases."""
    edges = _neighbour_graph(ctx, memories, min(ctx.options.similarity_threshold, CONTRADICTION_BAND[0]))
    groups = clustering.duplicate_groups(list(memories), edges, DUPLICATE_THRESHOLD)
    plan: list[tuple[ScannedMemory, list[ScannedMemory], float]] = []
    for group in groups:
        members = [memories[mid] for mid in group.member_ids]
        keep = max(members, key=lambda m: (m.confidence, m.usage_count, -m.created))
        plan.append((keep, [m for m in members if m.id != keep.id], group.min_similarity))
    if ctx.dry:
        described = _preview_sources(ctx, [m.id for keep, others, _ in plan for m in (keep, *others)])
        for keep, others, similarity in plan:
            ctx.note(
                "duplicates",
                {
                    "keep": keep.id,
                    "archive": [m.id for m in others],
                    "similarity": round(similarity, 4),
                    "sources": [described[m.id] for m in (keep, *others)],
                },
            )
    elif plan:
        # no LLM involved: every group is merged in one transaction with set-based statements
        with transaction.atomic():
            live = set(_lock_active([m.id for keep, others, _ in plan for m in (keep, *others)]))
            plan = [item for item in plan if item[0].id in live and all(m.id in live for m in item[1])]
            _archive([m.id for _, others, _ in plan for m in others], Memory.ARCHIVED_DUPLICATE, into=None)
            links = [(keep.id, other.id, round(similarity, 4)) for keep, others, similarity in plan for other in others]
            # one statement for thousands of links (bulk_create would bind 8 parameters per row)
            with connection.cursor() as cursor:
                if links:  # empty when another run took every group's members meanwhile
                    cursor.execute(
                        "INSERT INTO memories_memorylink "
                        "(organization_id, source_id, target_id, kind, weight, reason, run_id, created_at) "
                        "SELECT %s, v.s, v.t, %s, v.w, %s, %s, %s FROM unnest(%s::text[], %s::text[], %s::float8[]) "
                        "AS v(s, t, w) ON CONFLICT DO NOTHING",
                        [
                            ctx.run.organization_id,
                            MemoryLink.KIND_DUPLICATES,
                            f"near-identical (similarity ≥ {DUPLICATE_THRESHOLD})",
                            ctx.run.id,
                            timezone.now(),
                            *map(list, zip(*links, strict=True)),
                        ],
                    )
    for _, others, _ in plan:
        for other in others:
            memories.pop(other.id, None)
            ctx.archived.append(other.id)
        ctx.counters["duplicates_merged"] += len(others)
        ctx.counters["archived"] += len(others)
    return edges


def _neighbour_graph(ctx: _Context, memories: dict[str, ScannedMemory], floor: float) -> list[Edge]:
    """The project's neighbour graph (edges ≥ ``floor`` between active memories). The first run
    probes the HNSW index for every memory; later runs reuse the stored graph and probe only the
    memories created or changed since it was built (their edges to older memories come from their
    own probes, their stored ones may be stale) and those in slices due for another probe (their
    stored edges stay, the probe adds what the last one missed). A lower floor, a bigger k, new
    embedding models, or every slice being due, probe every memory again.
    Stored in the same run, except in a dry run."""
    k = NEIGHBOURS_PER_MEMORY
    models = sorted({m.embedding_model for m in memories.values()})
    graph = neighbour_graph_get(organization_id=ctx.run.organization_id, project_id=ctx.project.id)
    due = set(range(graph_slices.SLICES))
    probed_at: list[datetime] = []
    if graph is not None:
        stamps = graph.slices_probed_at or [graph.rebuilt_at.isoformat()] * graph_slices.SLICES  # legacy row
        probed_at = [datetime.fromisoformat(at) for at in stamps]
        due = graph_slices.slices_due(probed_at, ctx.now, GRAPH_REPROBE_AFTER)
    reuse = (
        graph is not None
        and graph.min_similarity <= floor + 1e-9
        and graph.neighbours >= k
        and graph.embedding_models == models
        and len(due) < graph_slices.SLICES
    )
    kept: dict[tuple[str, str], float] = {}
    gone: set[str] = set()
    if reuse:
        assert graph is not None
        cutoff = (graph.built_at - GRAPH_CLOCK_MARGIN).timestamp()
        changed = {mid for mid, m in memories.items() if m.created >= cutoff or m.updated >= cutoff}
        probe = sorted(changed | {mid for mid in memories if graph_slices.slice_of(mid) in due})
        stored = stored_edges(organization_id=ctx.run.organization_id, project_id=ctx.project.id, min_similarity=floor)
        for a, b, similarity in stored:
            if a in memories and b in memories:
                if a not in changed and b not in changed:
                    kept[(a, b)] = similarity
            else:
                gone.update(x for x in (a, b) if x not in memories)
        gone |= changed
        probed_at = [at if i not in due else ctx.now for i, at in enumerate(probed_at)]
    else:
        probe = list(memories)
        probed_at = graph_slices.slices_staggered(ctx.now, GRAPH_REPROBE_AFTER)
    fresh = (
        neighbour_edges(
            organization_id=ctx.run.organization_id, project_id=ctx.project.id, ids=probe, min_similarity=floor, k=k
        )
        if probe
        else []
    )
    ctx.counters["neighbour_probes"] = len(probe)
    # a re-probed memory's stored edges come back from its probe: one edge per pair (a < b both)
    merged = dict(kept)
    merged.update(((a, b), s) for a, b, s in fresh)
    edges = [(a, b, s) for (a, b), s in merged.items()]
    if not ctx.dry:
        _neighbour_graph_store(
            ctx,
            fresh,
            replace_all=not reuse,
            forget=sorted(gone),
            min_similarity=floor,  # reused edges were read at this floor too
            k=k,
            models=models,
            edge_count=len(edges),
            probed_at=probed_at,
        )
    return edges


def _neighbour_graph_store(
    ctx: _Context,
    fresh: list[Edge],
    *,
    replace_all: bool,
    forget: list[str],
    min_similarity: float,
    k: int,
    models: list[str],
    edge_count: int,
    probed_at: list[datetime],
) -> None:
    """Bring the stored graph up to date in one transaction (a crash keeps the previous graph)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if replace_all:
            cursor.execute("DELETE FROM consolidation_neighbouredge WHERE project_id = %s", [ctx.project.id])
        elif forget:
            cursor.execute(
                "DELETE FROM consolidation_neighbouredge WHERE project_id = %s "
                "AND (source = ANY(%s) OR target = ANY(%s))",
                [ctx.project.id, forget, forget],
            )
        if fresh:
            sources, targets, similarities = (list(column) for column in zip(*fresh, strict=True))
            cursor.execute(
                "INSERT INTO consolidation_neighbouredge (organization_id, project_id, source, target, similarity) "
                "SELECT %s, %s, v.s, v.t, v.w FROM unnest(%s::text[], %s::text[], %s::float8[]) AS v(s, t, w) "
                "ON CONFLICT (project_id, source, target) DO UPDATE SET similarity = EXCLUDED.similarity",
                [ctx.run.organization_id, ctx.project.id, sources, targets, similarities],
            )
        NeighbourGraph.objects.update_or_create(
            project=ctx.project,
            defaults={
                **({"rebuilt_at": ctx.now} if replace_all else {}),
                "organization_id": ctx.run.organization_id,
                "built_at": ctx.now,
                "min_similarity": min_similarity,
                "neighbours": k,
                "embedding_models": models,
                "edge_count": edge_count,
                "slices_probed_at": [at.isoformat() for at in probed_at],
            },
        )


def _cluster(ctx: _Context, memories: dict[str, ScannedMemory], edges: list[Edge]) -> list[clustering.Cluster[str]]:
    # disputed memories wait for a moderator instead of being merged away
    disputed: set[str] = set()
    for source, target in MemoryLink.objects.filter(
        organization_id=ctx.run.organization_id,
        kind=MemoryLink.KIND_CONTRADICTS,
        resolved_at__isnull=True,
        source__project=ctx.project,
    ).values_list("source_id", "target_id"):
        if source in memories:
            disputed.update((source, target))
    candidates = {mid: m for mid, m in memories.items() if mid not in disputed}
    live = [e for e in edges if e[0] in candidates and e[1] in candidates]
    clusters = clustering.average_linkage_clusters(
        list(candidates),
        live,
        ctx.options.similarity_threshold,
        min_size=ctx.options.min_cluster_size,
        max_size=ctx.options.max_cluster_size,
    )
    # biggest, tightest clusters first so max_clusters keeps the most valuable merges
    clusters.sort(key=lambda c: (-len(c.member_ids), -c.average_similarity, c.member_ids[0]))
    ctx.counters["clusters"] = len(clusters)
    if ctx.options.max_clusters:
        clusters = clusters[: ctx.options.max_clusters]
    # seed 000 SkippedCount: memories evaluated but not consolidated (failed clusters add theirs later)
    ctx.counters["skipped"] = len(memories) - len({mid for c in clusters for mid in c.member_ids})
    return clusters


def _synthesize(ctx: _Context, clusters: list[clustering.Cluster[str]]) -> None:
    """Seed 000: one LLM synthesis per cluster (concurrently), then one transaction per merge."""
    if not clusters:
        return
    if ctx.dry:
        described = _preview_sources(ctx, [m for c in clusters for m in c.member_ids])
        for c in clusters:
            ctx.note(
                "clusters",
                {
                    "members": list(c.member_ids),
                    "titles": [described[m]["title"] for m in c.member_ids],
                    "average_similarity": round(c.average_similarity, 4),
                    "sources": [described[m] for m in c.member_ids],
                },
            )
            # seed 000: a dry run returns what *would* be archived
            ctx.archived.extend(c.member_ids)
            ctx.counters["archived"] += len(c.member_ids)
        return
    llm = ctx.llm or llm_from_settings()
    if llm.provider == "none":
        ctx.warnings.append(
            f"{len(clusters)} clusters wait for an LLM (LLM_PROVIDER=none); duplicates, tiers and archival were applied"
        )
        ctx.counters["skipped"] += sum(len(c.member_ids) for c in clusters)
        return
    sources = {
        m.id: m
        for m in Memory.objects.filter(pk__in=[mid for c in clusters for mid in c.member_ids]).defer("embedding")
    }
    replies = _llm_map(
        ctx,
        llm,
        "synthesize",
        [cprompts.build_synthesis_prompt([_source(sources[mid]) for mid in c.member_ids]) for c in clusters],
        system="You consolidate an engineering team's memory bank. Follow the output format exactly.",
    )
    for cluster, reply in zip(clusters, replies, strict=True):
        ctx.check_time()
        if isinstance(reply, Exception):
            ctx.errors.append(f"cluster {cluster.member_ids[0]}…: {reply}")
            ctx.counters["skipped"] += len(cluster.member_ids)
            continue
        try:
            synthesis = cprompts.parse_synthesis(reply)
            merged = _merge_cluster(ctx, cluster, [sources[mid] for mid in cluster.member_ids], synthesis)
        except Exception as exc:  # one cluster failing must not stop the others; its transaction rolled back
            logger.warning("cluster merge failed in run %s: %s", ctx.run.id, exc)
            ctx.errors.append(f"cluster {cluster.member_ids[0]}…: {type(exc).__name__}: {exc}")
            ctx.counters["skipped"] += len(cluster.member_ids)
            continue
        if merged is None:
            ctx.counters["skipped"] += len(cluster.member_ids)


def _preview_sources(ctx: _Context, ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """How a dry run's preview names each proposed source: near-identical rows often share a title,
    so the id, creation time and project tell them apart (issue 11 item 7)."""
    rows = Memory.objects.filter(organization_id=ctx.run.organization_id, pk__in=list(ids)).values_list(
        "id", "title", "created_at"
    )
    described = {
        mid: {"id": mid, "title": title, "created_at": created.isoformat(), "project": ctx.project.slug}
        for mid, title, created in rows
    }
    # a source gone since the scan (never deleted, but be safe) still gets an entry
    return {
        mid: described.get(mid) or {"id": mid, "title": "", "created_at": "", "project": ctx.project.slug}
        for mid in ids
    }


def _source(memory: Memory) -> cprompts.SourceMemory:
    return cprompts.SourceMemory(
        id=memory.id,
        title=memory.title,
        content=memory.content,
        tags=tuple(memory.tags),
        confidence=memory.confidence,
        usage_count=memory.usage_count,
        outcome=memory.outcome,
        created_at=memory.created_at,
    )


def _merge_cluster(
    ctx: _Context, cluster: clustering.Cluster[str], sources: list[Memory], synthesis: cprompts.Synthesis
) -> Memory | None:
    """Create the consolidated memory, archive the sources into it, link both ways — atomically."""
    confidence = cprompts.consolidated_confidence([(m.confidence, m.usage_count) for m in sources])
    draft = MemoryDraft(
        title=synthesis.title[:200],
        description=(synthesis.source_attribution or f"Synthesized from {len(sources)} source memories")[:2000],
        content=synthesis.content[:20000],
        outcome=synthesis.outcome,
        tags=_tags_lenient(synthesis.tags),
        kind=Memory.KIND_PROCEDURAL,
    )
    (vector,), _ = _embed([memory_embedding_text(draft.title, draft.description, draft.content)])
    with transaction.atomic():
        live = _lock_active([m.id for m in sources])
        if len(live) != len(sources):
            return None  # a source changed since the scan (re-run, moderator): leave it for next time
        (merged,) = memories_create(
            principal=ctx.principal,
            drafts=[draft],
            project=ctx.project,
            origin=Memory.ORIGIN_CONSOLIDATED,
            initial_confidence=min(0.99, max(0.01, confidence.final)),
            vectors=[vector],
        )
        merged.usage_count = sum(m.usage_count for m in sources)
        merged.save(update_fields=["usage_count"])
        _archive([source.id for source in sources], Memory.ARCHIVED_CONSOLIDATED, into=merged)
        for source in sources:
            _link(
                ctx,
                merged.id,
                source.id,
                MemoryLink.KIND_CONSOLIDATES,
                cluster.average_similarity,
                "synthesized into a consolidated memory",
            )
        audit_record(
            organization=ctx.run.organization,
            actor=ctx.principal,
            verb="memory.consolidate",
            target=merged,
            data={
                "run": ctx.run.id,
                "sources": [m.id for m in sources],
                "confidence": {"weighted": confidence.weighted, "bonus": confidence.bonus},
            },
        )
    ctx.created.append(merged.id)
    ctx.archived.extend(m.id for m in sources)
    ctx.counters["created"] += 1
    ctx.counters["archived"] += len(sources)
    return merged


def _parsed(ctx: _Context, reply: str | Exception, parse: Callable[[str], Any], what: str) -> Any:
    """A judge's parsed verdict, or None with a run warning when the call or its reply failed."""
    try:
        if isinstance(reply, Exception):
            raise reply
        return parse(reply)
    except (cprompts.PromptParseError, LLMError) as exc:
        ctx.warnings.append(f"{what} failed: {exc}")
        return None


def _tags_lenient(tags: Iterable[str]) -> list[str]:
    """LLM-made tags: lower-cased, de-duplicated, over-long ones dropped, at most 20 (never raises)."""
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip().lower().replace("\x00", "")
        if tag and len(tag) <= 50 and tag not in cleaned:
            cleaned.append(tag)
    return cleaned[:20]


def _judge(ctx: _Context, edges: list[Edge], memories: dict[str, ScannedMemory]) -> None:
    """Pairs in the 0.7–0.95 band that involve a memory new since the last run: first the
    supersession check (002, conservative), otherwise the contradiction judge (004). Pairs are
    chosen from the scan; texts are only loaded for the (at most 50) pairs an LLM will read."""
    low, high = CONTRADICTION_BAND
    candidates = sorted(
        (e for e in edges if low <= e[2] < high and e[0] in memories and e[1] in memories), key=lambda e: -e[2]
    )
    if not candidates:
        return
    linked = set(
        MemoryLink.objects.filter(
            organization_id=ctx.run.organization_id,
            kind__in=[MemoryLink.KIND_CONTRADICTS, MemoryLink.KIND_SUPERSEDES],
            source__project=ctx.project,
        ).values_list("source_id", "target_id")
    )
    since = ctx.since.timestamp() if ctx.since is not None else None
    chosen: list[tuple[str, str, float]] = []
    for a, b, similarity in candidates:
        if (a, b) in linked or (b, a) in linked:
            continue
        first, second = sorted((memories[a], memories[b]), key=lambda m: (m.created, m.id))
        if since is not None and second.created < since:
            continue  # both were already judged by an earlier run
        chosen.append((first.id, second.id, similarity))
        if len(chosen) >= MAX_JUDGED_PAIRS:
            ctx.warnings.append(f"only the {MAX_JUDGED_PAIRS} most similar new pairs were judged this run")
            break
    if not chosen:
        return
    if ctx.dry:
        for older_id, newer_id, similarity in chosen:
            ctx.note("judge_pairs", {"older": older_id, "newer": newer_id, "similarity": round(similarity, 4)})
        return
    llm = ctx.llm or llm_from_settings()
    if llm.provider == "none":
        ctx.warnings.append(f"{len(chosen)} pairs wait for an LLM to check for contradictions")
        return
    rows = {
        m.id: m
        for m in Memory.objects.filter(
            pk__in={mid for pair in chosen for mid in pair[:2]}, state=Memory.STATE_ACTIVE
        ).only("id", "title", "content", "created_at")
    }
    pairs = [(rows[o], rows[n], s) for o, n, s in chosen if o in rows and n in rows]
    if not pairs:
        return
    verdicts = _llm_map(
        ctx,
        llm,
        "supersede",
        [
            cprompts.build_supersession_prompt((o.title, o.content, o.created_at), (n.title, n.content, n.created_at))
            for o, n, _ in pairs
        ],
        system=cprompts.SUPERSESSION_SYSTEM_PROMPT,
    )
    undecided: list[tuple[Memory, Memory, float]] = []
    for (older, newer, similarity), reply in zip(pairs, verdicts, strict=True):
        verdict = _parsed(ctx, reply, cprompts.parse_supersession, f"supersession check {older.id}/{newer.id}")
        if verdict is None:
            continue
        if cprompts.is_confident_supersession(verdict):
            with transaction.atomic():
                if len(_lock_active([older.id, newer.id])) == 2:
                    _archive(older.id, Memory.ARCHIVED_SUPERSEDED, into=None)
                    _link(ctx, newer.id, older.id, MemoryLink.KIND_SUPERSEDES, similarity, verdict.reason or "")
                    memories.pop(older.id, None)
                    ctx.archived.append(older.id)
                    ctx.counters["supersessions"] += 1
                    ctx.counters["archived"] += 1
        else:
            undecided.append((older, newer, similarity))
    if not undecided:
        return
    replies = _llm_map(
        ctx,
        llm,
        "judge",
        [cprompts.build_contradiction_prompt(o.content, n.content) for o, n, _ in undecided],
        system="You are a careful reviewer of an engineering team's knowledge base. Answer with JSON only.",
    )
    found = []
    for (older, newer, _similarity), reply in zip(undecided, replies, strict=True):
        verdict = _parsed(ctx, reply, cprompts.parse_contradiction, f"contradiction check {older.id}/{newer.id}")
        if verdict is None:
            continue
        if cprompts.is_confident_contradiction(verdict):
            # both stay active: a moderator decides (DESIGN: no silent invalidation)
            _link(
                ctx,
                newer.id,
                older.id,
                MemoryLink.KIND_CONTRADICTS,
                verdict.confidence,
                verdict.explanation or verdict.reasoning,
            )
            ctx.counters["contradictions"] += 1
            found.append(
                {
                    "first": newer.id,
                    "second": older.id,
                    "confidence": verdict.confidence,
                    "explanation": verdict.explanation,
                }
            )
    if found:
        events.contradiction_detected.send(sender=ConsolidationRun, run=ctx.run, contradictions=found)


def _patterns(ctx: _Context) -> None:
    """Seed 004 pattern extraction from recent episodic memories → semantic memories, and 003's
    promotion of working memories (important, used 3+ times or older than 15 min → semantic)."""
    base = Memory.objects.filter(organization=ctx.run.organization, project=ctx.project, state=Memory.STATE_ACTIVE)
    working = list(
        base.filter(kind=Memory.KIND_WORKING).only("id", "importance", "usage_count", "created_at", "expires_at")
    )
    promote = [
        m for m in working if m.importance > 0.7 or m.usage_count >= 3 or ctx.now - m.created_at > timedelta(minutes=15)
    ]
    if promote and not ctx.dry:
        Memory.objects.filter(pk__in=[m.id for m in promote]).update(
            kind=Memory.KIND_SEMANTIC, expires_at=None, importance=retention.importance_for_kind(Memory.KIND_SEMANTIC)
        )
    ctx.counters["promoted"] = len(promote)
    since = ctx.now - timedelta(days=PATTERN_WINDOW_DAYS)
    episodes_qs = base.filter(kind=Memory.KIND_EPISODIC, created_at__gte=max(since, ctx.since or since))
    episodes = list(
        episodes_qs.order_by("created_at").only("id", "content", "created_at")[: cprompts.PATTERN_EPISODE_LIMIT]
    )
    if len(episodes) < cprompts.MIN_EPISODES_FOR_PATTERNS:
        return
    if ctx.dry:
        ctx.note("pattern_sources", [m.id for m in episodes])
        return
    llm = ctx.llm or llm_from_settings()
    if llm.provider == "none":
        ctx.warnings.append(f"pattern extraction from {len(episodes)} episodes waits for an LLM")
        return
    (reply,) = _llm_map(
        ctx,
        llm,
        "patterns",
        [cprompts.build_pattern_prompt([(m.created_at, m.content) for m in episodes])],
        system="You extract durable facts and habits from an engineering team's episodic memories.",
    )
    patterns = _parsed(ctx, reply, cprompts.parse_patterns, "pattern extraction")
    if not patterns:
        return
    vectors, _ = _embed(patterns)
    for pattern, vector in zip(patterns, vectors, strict=True):
        if _has_twin(ctx, vector):
            continue
        draft = MemoryDraft(
            title=pattern[:200],
            description=f"Pattern extracted from {len(episodes)} episodic memories",
            content=pattern,
            outcome=Memory.OUTCOME_SUCCESS,
            tags=["pattern"],
            kind=Memory.KIND_SEMANTIC,
        )
        with transaction.atomic():
            (memory,) = memories_create(
                principal=ctx.principal,
                drafts=[draft],
                project=ctx.project,
                origin=Memory.ORIGIN_EXTRACTED,
                initial_confidence=conf.INITIAL_DEFAULT + 0.1,
                vectors=[vector],
            )
            for episode in episodes:
                _link(ctx, memory.id, episode.id, MemoryLink.KIND_REFERENCES, 1.0, "pattern source")
        ctx.created.append(memory.id)
        ctx.counters["patterns"] += 1
        events.pattern_extracted.send(sender=ConsolidationRun, run=ctx.run, memory=memory, source_count=len(episodes))


def _has_twin(ctx: _Context, vector: list[float]) -> bool:
    from pgvector.django import CosineDistance

    nearest = (
        Memory.objects.filter(organization=ctx.run.organization, project=ctx.project, state=Memory.STATE_ACTIVE)
        .annotate(d=CosineDistance("embedding", vector))
        .order_by("d")
        .values_list("d", flat=True)
        .first()
    )
    return nearest is not None and 1 - nearest >= DUPLICATE_THRESHOLD


def _archive_stale(ctx: _Context, memories: dict[str, ScannedMemory]) -> None:
    """Seed 004: archive low-salience memories idle for 30 days; expired working memories too.
    Uses the salience computed by this run's retention phase (also in a dry run)."""
    now = ctx.now.timestamp()
    stale = [
        m.id
        for m in memories.values()
        if retention.is_stale(
            m.salience, idle_seconds=now - m.last_access, threshold=STALE_RETENTION, max_idle_days=STALE_IDLE_DAYS
        )
        or (m.kind == Memory.KIND_WORKING and m.expires is not None and m.expires < now)
    ]
    if not stale:
        return
    if ctx.dry:
        ctx.preview["stale"] = stale
    else:
        # one statement: only rows still active are archived (the row lock is the UPDATE's own)
        stale = _archive(stale, Memory.ARCHIVED_STALE, into=None, only_active=True)
    ctx.archived.extend(stale)
    ctx.counters["archived"] += len(stale)


# --- helpers ---------------------------------------------------------------------------------------


# Raw SQL with one array parameter: ``pk__in`` over thousands of ids compiles and binds one
# placeholder per id, which cost seconds per statement at 100K memories.


def _lock_active(ids: Iterable[str]) -> list[str]:
    """Lock the still-active ones of these memories (in id order, so concurrent lockers never
    deadlock) and return their ids."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memories_memory WHERE id = ANY(%s) AND state = %s ORDER BY id FOR UPDATE",
            [list(ids), Memory.STATE_ACTIVE],
        )
        return [row[0] for row in cursor.fetchall()]


def _archive(
    memory_ids: str | Sequence[str], reason: str, *, into: Memory | None, only_active: bool = False
) -> list[str]:
    """Archive these memories (never deletes); returns the ids it archived."""
    ids = [memory_ids] if isinstance(memory_ids, str) else list(memory_ids)
    now = timezone.now()
    params: list[Any] = [Memory.STATE_ARCHIVED, reason, now, "archived", into.id if into else None, now, ids]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET state = %s, archived_reason = %s, archived_at = %s, tier = %s, "
            "consolidated_into_id = %s, updated_at = %s WHERE id = ANY(%s)"
            + (" AND state = %s" if only_active else "")
            + " RETURNING id",
            params + ([Memory.STATE_ACTIVE] if only_active else []),
        )
        return [row[0] for row in cursor.fetchall()]


def _link(ctx: _Context, source: str, target: str, kind: str, weight: float, reason: str) -> None:
    MemoryLink.objects.get_or_create(
        source_id=source,
        target_id=target,
        kind=kind,
        defaults={
            "organization": ctx.run.organization,
            "weight": round(float(weight), 4),
            "reason": reason[:2000],
            "run": ctx.run,
        },
    )


def _llm_map(ctx: _Context, llm: Any, purpose: str, prompts: Sequence[str], *, system: str) -> list[str | Exception]:
    """Call the LLM for each prompt, at most CONSOLIDATION_LLM_CONCURRENCY at a time."""
    org, run = ctx.run.organization, ctx.run

    def one(prompt: str) -> str | Exception:
        try:
            return llm_complete(organization=org, purpose=purpose, system=system, prompt=prompt, llm=llm, run=run).text
        except LLMError as exc:
            return exc

    def one_in_thread(prompt: str) -> str | Exception:
        # worker threads get their own database connection; close it when done
        close_old_connections()
        try:
            return one(prompt)
        finally:
            connection.close()

    if len(prompts) == 1 or connection.in_atomic_block:
        return [one(p) for p in prompts]
    with ThreadPoolExecutor(max_workers=min(settings.CONSOLIDATION_LLM_CONCURRENCY, len(prompts))) as pool:
        return list(pool.map(one_in_thread, prompts))


# --- moderation ------------------------------------------------------------------------------------


def _unmerge_refusal(memory: Memory) -> str | None:
    """Why this memory cannot be un-merged, saying what to do instead; None when it can be."""
    if memory.origin != Memory.ORIGIN_CONSOLIDATED:
        if memory.archived_reason == Memory.ARCHIVED_DUPLICATE:
            kept = (
                MemoryLink.objects.filter(
                    organization_id=memory.organization_id, target=memory, kind=MemoryLink.KIND_DUPLICATES
                )
                .values_list("source_id", flat=True)
                .first()
            )
            return (
                f"memory {memory.id} was archived as a duplicate{f' of {kept}' if kept else ''}, not merged into a "
                "consolidated memory, so there is nothing to un-merge: restore it to make it active again"
            )
        if memory.consolidated_into_id:
            return (
                f"memory {memory.id} is a source of the consolidated memory {memory.consolidated_into_id}: "
                "un-merge that one to bring back all of its sources"
            )
        return f"only consolidated memories can be un-merged; memory {memory.id} was {memory.origin}, not consolidated"
    if memory.state != Memory.STATE_ACTIVE:
        return (
            f"consolidated memory {memory.id} is already archived ({memory.archived_reason}): it was un-merged or "
            "archived before; restore it first to un-merge it"
        )
    return None


@transaction.atomic
def memory_unmerge(*, principal: Principal, memory: Memory) -> list[Memory]:
    """Undo a consolidation: the sources come back, the consolidated memory is archived. Links stay."""
    from memories.models import Memory as M

    if not principal.has_scope("memories:write"):
        raise Forbidden("un-merging needs the 'memories:write' scope")
    refusal = _unmerge_refusal(memory)
    if refusal:  # the memory's state forbids it (a 409), the request itself is well-formed
        raise Conflict(refusal, field="memory_id")
    sources = list(M.objects.select_for_update().filter(consolidated_into=memory, organization=principal.organization))
    if not sources:
        raise Conflict("this consolidated memory has no archived sources left to restore", field="memory_id")
    now = timezone.now()
    M.objects.filter(pk__in=[s.pk for s in sources]).update(
        state=M.STATE_ACTIVE, archived_reason="", archived_at=None, consolidated_into=None, tier="warm", updated_at=now
    )
    M.objects.filter(pk=memory.pk).update(
        state=M.STATE_ARCHIVED, archived_reason=M.ARCHIVED_MANUAL, archived_at=now, tier="archived", updated_at=now
    )
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.unmerge",
        target=memory,
        data={"restored": [s.id for s in sources]},
    )
    return list(M.objects.filter(pk__in=[s.pk for s in sources]))


RESOLUTIONS = ("keep_first", "keep_second", "keep_both")


@transaction.atomic
def contradiction_resolve(*, principal: Principal, link: MemoryLink, resolution: str) -> MemoryLink:
    """A moderator settles a dispute: keep one (the other is superseded and archived) or both."""
    if not principal.has_scope("memories:write"):
        raise Forbidden("resolving disputes needs the 'memories:write' scope")
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"resolution must be one of {', '.join(RESOLUTIONS)}", field="resolution")
    link = MemoryLink.objects.select_for_update().get(pk=link.pk)
    if link.resolved_at is not None:
        raise Conflict("this dispute is already resolved")
    if resolution != "keep_both":
        keep, drop = (link.source, link.target) if resolution == "keep_first" else (link.target, link.source)
        _archive(drop.id, Memory.ARCHIVED_SUPERSEDED, into=None)
        MemoryLink.objects.get_or_create(
            source=keep,
            target=drop,
            kind=MemoryLink.KIND_SUPERSEDES,
            defaults={"organization": link.organization, "reason": "moderator resolved a contradiction"},
        )
    link.resolved_at = timezone.now()
    link.save(update_fields=["resolved_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="contradiction.resolve",
        target=link.source,
        data={"link": link.pk, "resolution": resolution, "other": link.target_id},
    )
    return link


# --- schedules -------------------------------------------------------------------------------------


def project_settings_get(project: Project) -> ProjectConsolidationSettings:
    row, _ = ProjectConsolidationSettings.objects.get_or_create(
        project=project, defaults={"organization_id": project.organization_id}
    )
    return row


@transaction.atomic
def project_settings_update(
    *,
    principal: Principal,
    project: Project,
    scheduled: bool,
    interval_hours: float | None,
    similarity_threshold: float | None,
) -> ProjectConsolidationSettings:
    if not principal.has_scope("admin") and not principal.has_scope(SCOPE_CONSOLIDATION_RUN):
        raise Forbidden("changing the consolidation schedule needs admin rights")
    if scheduled:
        _require_feature(principal.organization, FEATURE_CONSOLIDATION_SCHEDULED, "scheduled consolidation")
    if interval_hours is not None and not 1 <= interval_hours <= 24 * 30:
        raise InvalidInput("interval must be between 1 hour and 30 days", field="interval_hours")
    if similarity_threshold is not None and not 0.5 <= similarity_threshold <= 0.99:
        raise InvalidInput("similarity threshold must be between 0.5 and 0.99", field="similarity_threshold")
    row = project_settings_get(project)
    row.scheduled = scheduled
    row.interval_seconds = int(interval_hours * 3600) if interval_hours else None
    row.similarity_threshold = similarity_threshold
    row.updated_at = timezone.now()
    row.save()
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="consolidation.schedule",
        target=project,
        data={"scheduled": scheduled, "interval_hours": interval_hours, "threshold": similarity_threshold},
    )
    return row


def consolidation_schedule_due(*, now: Any = None) -> list[ConsolidationRun]:
    """Queue a scheduled run for every Teams+ project whose interval has passed. One project's
    failure never stops the others."""
    if not settings.CONSOLIDATION_SCHEDULER_ENABLED:
        return []
    now = now or timezone.now()
    queued = []
    projects = Project.objects.select_related("organization").filter(
        organization__plan__in=[p for p in ("teams", "enterprise")]
    )
    for project in projects:
        try:
            row = project_settings_get(project)
            if not row.scheduled:
                continue
            interval = row.interval_seconds or settings.CONSOLIDATION_SCHEDULER_INTERVAL
            last = (
                ConsolidationRun.objects.filter(
                    project=project, dry_run=False, status__in=["queued", "running", "completed"]
                )
                .order_by("-created_at")
                .first()
            )
            if last is not None and last.created_at > now - timedelta(seconds=interval):
                continue
            threshold = row.similarity_threshold or settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD
            run = consolidation_request(
                principal=system_principal(project.organization),
                project=project,
                options=RunOptions(similarity_threshold=threshold, force=True),
                trigger=ConsolidationRun.TRIGGER_SCHEDULED,
            )
            consolidation_enqueue(run)
            queued.append(run)
        except Exception as exc:  # one project failing never stops the scheduler (seed 000)
            logger.warning("Project consolidation failed project=%s error=%r", project.slug, str(exc))
    return queued


def consolidation_on_demand(*, project: Project) -> ConsolidationRun | None:
    """Seed 003: once a project has N new memories since its last run, consolidate it (Teams+)."""
    if not project.organization.has_feature(FEATURE_CONSOLIDATION_SCHEDULED):
        return None
    last = ConsolidationRun.objects.filter(project=project, dry_run=False).order_by("-created_at").first()
    if last is not None and last.status in ("queued", "running"):
        return None
    new = Memory.objects.filter(project=project, origin__in=[Memory.ORIGIN_RECORDED, Memory.ORIGIN_DISTILLED])
    if last is not None:
        new = new.filter(created_at__gt=last.created_at)
    if new.count() < settings.CONSOLIDATION_ON_DEMAND_THRESHOLD:
        return None
    try:
        run = consolidation_request(
            principal=system_principal(project.organization),
            project=project,
            options=RunOptions(similarity_threshold=settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD, force=True),
            trigger=ConsolidationRun.TRIGGER_ON_DEMAND,
        )
    except Conflict:
        return None
    consolidation_enqueue(run)
    return run


# a running run's heartbeat is stamped at each phase; one phase may take the whole run timeout
HEARTBEAT_MARGIN = timedelta(minutes=5)


def _minutes(seconds: float) -> str:
    value = seconds / 60
    return f"{value:g} minute{'' if value == 1 else 's'}"


def runs_recover_stale(*, project: Project | None = None, stale_after: timedelta | None = None) -> int:
    """Fail the runs whose worker is gone, so they never block their project (one active run per
    project): queued runs no worker claimed within CONSOLIDATION_QUEUE_TIMEOUT (no worker running,
    or it died before claiming) and running runs without a heartbeat for the run timeout plus a
    margin (crash or restart). Their committed clusters stay merged, nothing is half-archived
    because each merge was one transaction. The scheduler tick calls it for every project, a new
    request for its own project. A late worker finds the run no longer queued and leaves it."""
    now = timezone.now()
    runs = ConsolidationRun.objects.all() if project is None else ConsolidationRun.objects.filter(project=project)
    queue_timeout = settings.CONSOLIDATION_QUEUE_TIMEOUT
    unclaimed = runs.filter(
        status=ConsolidationRun.STATUS_QUEUED, created_at__lt=now - timedelta(seconds=queue_timeout)
    ).update(
        status=ConsolidationRun.STATUS_FAILED,
        finished_at=now,
        errors=[
            f"no worker picked this run up within {_minutes(queue_timeout)}; is the worker running? "
            "(`manage.py qcluster`, which scripts/run.sh starts) Request the run again once it is."
        ],
    )
    stale_after = stale_after or timedelta(seconds=settings.CONSOLIDATION_RUN_TIMEOUT) + HEARTBEAT_MARGIN
    cutoff = now - stale_after
    dead = (
        runs.filter(status=ConsolidationRun.STATUS_RUNNING)
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff))
        .update(
            status=ConsolidationRun.STATUS_FAILED,
            finished_at=now,
            errors=[
                f"no heartbeat from its worker for {_minutes(stale_after.total_seconds())}: the worker running "
                "this stopped (crash or restart); committed merges were kept, re-run to continue"
            ],
        )
    )
    if unclaimed or dead:
        logger.warning(
            "Consolidation runs failed: %d queued with no worker within %s, %d running without a heartbeat",
            unclaimed,
            _minutes(queue_timeout),
            dead,
        )
    return unclaimed + dead
