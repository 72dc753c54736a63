"""The working state one consolidation run carries through its phases (``RunState``: what the scan
loaded, the neighbour graph, the clusters, counters, preview, warnings), its options, the thresholds
the phases share, and the helpers every phase uses: links, the audited archive, the LLM fan-out and
reply parsing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from accounts.access import Principal
from accounts.models import Project
from consolidation import clustering
from consolidation.models import ConsolidationRun, empty_counters
from consolidation.prompts.reply import PromptParseError, SourceMemory
from consolidation.selectors import Edge, ScannedMemory
from memories.models import Memory, MemoryLink
from memories.writes import MemoryDraft, memories_archive, memory_gate, memory_rejection_record
from reasoningbank.ai.batch_services import BatchSession, LLMDeferred
from reasoningbank.ai.budget import LLMBudgetExceeded
from reasoningbank.ai.llm import LLMError, llm_from_settings
from reasoningbank.ai.metered import llm_complete
from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.tracing import bind

logger = logging.getLogger("consolidation")

STALE_RETENTION = 0.1
RETENTION_WRITE_DELTA = 0.05  # stored retention is refreshed when it moved at least this much
STALE_IDLE_DAYS = 30
PATTERN_WINDOW_DAYS = 7
# memories created or changed this long before the stored graph's run started are probed again:
# created_at/updated_at are stamped by other processes whose clocks may lag the worker's
GRAPH_CLOCK_MARGIN = timedelta(minutes=5)
# an approximate index misses a few percent of the edges in any one pass, and an incremental
# run never looks for them again: each memory is probed again this long after its last probe,
# a slice of the project a day (consolidation.graph_slices)
GRAPH_REPROBE_AFTER = timedelta(days=7)


@dataclass(frozen=True)
class Conflict:
    similarity: float
    cues: tuple[str, ...]


def duplicate_threshold() -> float:
    """Pairs at least this similar merge as duplicates without an LLM (per embedder: settings)."""
    return float(settings.CONSOLIDATION_DUPLICATE_THRESHOLD)


def contradiction_band() -> tuple[float, float]:
    """The new pairs the judge reads: from CONSOLIDATION_JUDGE_MIN_SIMILARITY up to the duplicates."""
    return float(settings.CONSOLIDATION_JUDGE_MIN_SIMILARITY), duplicate_threshold()


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True)
class RunOptions:
    similarity_threshold: float = 0.8
    max_clusters: int = 0  # 0 = no limit
    dry_run: bool = False
    min_cluster_size: int = clustering.DEFAULT_MIN_CLUSTER_SIZE
    max_cluster_size: int = clustering.DEFAULT_MAX_CLUSTER_SIZE

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def of(cls, stored: dict[str, Any]) -> RunOptions:
        """The options a run was requested with, from its ``options`` column. Keys this version no longer
        reads are dropped: a run queued before an upgrade carries ``force``, which no longer means
        anything (docs/consolidation.md#what-starts-a-run)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in stored.items() if key in known})


class RunTimeout(Exception):
    pass


@dataclass
class RunState:
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
    # (consolidated memory id, its source ids) per cluster synthesised — empty ids in a dry run
    merges: list[tuple[str, list[str]]] = field(default_factory=list)
    # summaries the batched synthesis gave with its memories (a ClusterSummary by consolidated memory id):
    # the summaries phase stores them without asking again
    summaries_given: dict[str, Any] = field(default_factory=dict)
    # close pairs (sorted ids) whose texts carry conflict cues: never merged, judged instead
    conflicts: dict[tuple[str, str], Conflict] = field(default_factory=dict)
    # pairs a judge or a moderator found compatible (they may merge), and pairs settled otherwise
    cleared: set[tuple[str, str]] = field(default_factory=set)
    settled: set[tuple[str, str]] = field(default_factory=set)
    since: Any = None  # start of the last completed run: "new" memories are newer than this
    # what one phase hands the next: the scan's memories, the neighbour graph the duplicates phase
    # builds, the clusters the synthesis merges
    memories: dict[str, ScannedMemory] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    clusters: list[clustering.Cluster[str]] = field(default_factory=list)
    # the run's WorkHeartbeat (reasoningbank.work_heartbeat): ``lost`` once a sweep failed the run
    heartbeat: Any = None
    # LLM calls the organization's budget refused (docs/llm-spend.md#what-waits): the work they were for
    # is left for the run's resumption, which waits for the latest refusal's period to turn
    budget_refusals: int = 0
    budget_refused: LLMBudgetExceeded | None = None
    # batch mode (docs/llm-spend.md#batch-mode): the session that answers the run's calls from its batches'
    # stored answers and records the others for the batch sent at the end of the pass (None: direct calls)
    batch: BatchSession | None = None

    @property
    def dry(self) -> bool:
        return self.options.dry_run

    def check_time(self) -> None:
        """Between phases: stop a run past its time limit, or one its project was released from."""
        if time.monotonic() > self.deadline:
            raise RunTimeout(f"run exceeded its {settings.CONSOLIDATION_RUN_TIMEOUT / 60:.0f}-minute limit")
        if self.heartbeat is not None and self.heartbeat.lost:
            raise RunTimeout(
                "the run was failed while it ran (its heartbeat had not reached the database in time); "
                "it stopped before its next phase"
            )

    def note(self, key: str, item: Any) -> None:
        self.preview.setdefault(key, []).append(item)


def run_llm(state: RunState) -> Any:
    """The LLM a run uses: the one it was given (tests, benchmarks) or the configured provider."""
    return state.llm or llm_from_settings()


def run_archive(
    state: RunState,
    memory_ids: str | Sequence[str],
    reason: str,
    *,
    into: Memory | None = None,
    only_active: bool = False,
) -> list[str]:
    """Archive for this run through the one audited archive service (the audit rows name the run)."""
    return memories_archive(
        organization=state.run.organization,
        memory_ids=memory_ids,
        reason=reason,
        into=into,
        only_active=only_active,
        data={"run": state.run.id},
    )


def link_add(state: RunState, source: str, target: str, kind: str, weight: float, reason: str) -> None:
    MemoryLink.objects.get_or_create(
        source_id=source,
        target_id=target,
        kind=kind,
        defaults={
            "organization": state.run.organization,
            "weight": round(float(weight), 4),
            "reason": scrub_secrets(reason).text[:2000],  # a judge's words, shown with the dispute
            "run": state.run,
        },
    )


def llm_map(
    state: RunState, llm: Any, purpose: str, prompts: Sequence[str], *, system: str, max_tokens: int = 2048
) -> list[str | Exception]:
    """Call the LLM for each prompt, at most CONSOLIDATION_LLM_CONCURRENCY at a time. In batch mode, a
    prompt its batch answered gets that answer, one never asked is deferred to the next batch (the phase
    leaves its work for the run's next pass, as for a call the budget refused), and one the batch did not
    answer (expired, cancelled) is called directly."""
    org, run = state.run.organization, state.run

    def one(prompt: str) -> str | Exception:
        if state.batch is not None:
            stored = state.batch.answer(purpose=purpose, system=system, prompt=prompt, max_tokens=max_tokens)
            if stored is not None:
                return stored
        try:
            return llm_complete(
                organization=org, purpose=purpose, system=system, prompt=prompt, llm=llm, subject=run,
                max_tokens=max_tokens,
            ).text  # fmt: skip
        except LLMBudgetExceeded as exc:
            state.budget_refusals += 1  # each thread adds one: the GIL keeps the count whole
            state.budget_refused = exc
            return exc
        except LLMError as exc:
            return exc

    def one_in_thread(prompt: str) -> str | Exception:
        # worker threads get their own database connection; close it when done
        close_old_connections()
        try:
            return one(prompt)
        finally:
            connection.close()

    if not prompts:
        return []  # a thread pool of no workers is an error
    if len(prompts) == 1 or connection.in_atomic_block:
        return [one(p) for p in prompts]
    with ThreadPoolExecutor(max_workers=min(settings.CONSOLIDATION_LLM_CONCURRENCY, len(prompts))) as pool:
        return list(pool.map(bind(one_in_thread), prompts))  # the llm.* spans inside the run's trace


def reply_parsed(state: RunState, reply: str | Exception, parse: Callable[[str], Any], what: str) -> Any:
    """A judge's parsed verdict, or None with a run warning when the call or its reply failed (a call
    the budget refused is counted once for the run, not warned about per call)."""
    if budget_refused(reply):
        return None
    try:
        if isinstance(reply, Exception):
            raise reply
        return parse(reply)
    except (PromptParseError, LLMError) as exc:
        state.warnings.append(f"{what} failed: {exc}")
        return None


def budget_refused(reply: str | Exception) -> bool:
    """Whether ``reply`` is a call whose work waits for the run's next pass: one the organization's LLM
    budget refused (``llm_map`` counted it), or one deferred to the run's LLM batch."""
    return isinstance(reply, LLMBudgetExceeded | LLMDeferred)


def prompt_source(memory: Memory) -> SourceMemory:
    return SourceMemory(
        id=memory.id,
        title=memory.title,
        content=memory.content,
        tags=tuple(memory.tags),
        confidence=memory.confidence,
        usage_count=memory.usage_count,
        outcome=memory.outcome,
        created_at=memory.created_at,
    )


def draft_refused(
    state: RunState, draft: MemoryDraft, *, source: str, prompts: Sequence[str], title_is_content: bool = False
) -> bool:
    """The write gate (``memories.core.gate``) on a memory the run is about to create: True when
    it is kept out — a run warning and a ``memory.rejected`` audit row say why; the run goes on."""
    rejection = memory_gate(draft, prompts=prompts, title_is_content=title_is_content)
    if rejection is None:
        return False
    state.warnings.append(f"{source}: the write gate kept out “{draft.title[:80]}”: {rejection.message}")
    memory_rejection_record(
        organization=state.run.organization,
        actor=state.principal,
        project=state.project,
        source=source,
        reason=rejection.reason,
        field=rejection.field,
        message=rejection.message,
        title=draft.title,
        data={"run": state.run.id},
    )
    return True
