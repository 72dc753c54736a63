"""Seeding a project's bank from its repository's history (docs/code-memory.md#seeding-from-history).

``history_seed_submit`` takes a request's commits (read from git by the client: the service never runs
git on a user's path), drops those this project already has from that repository (a re-run after a
force-push reads the rewritten history again: only commits not seen are submitted), estimates what their
distillation will cost, and — unless it is a dry run — hands them in as ``git-log`` sessions, one a batch,
remembering each commit and the newest one read. Without an LLM the sessions wait for one, and each
commit message the write gate lets in becomes an episodic memory anchored to the files it changed.

``history_distilled_anchor`` anchors what distillation drew from a ``git-log`` session to the commits
each memory cites (the ``session_memories_distilled`` receiver).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, Project
from accounts.selectors import PriceTable
from accounts.services import audit_record
from memories.code.anchors import PATH_MAX, SYMBOL_MAX, path_normalise
from memories.code.history import history_batches
from memories.code.history_trace import (
    HEADER,
    TraceCommit,
    commit_anchors,
    git_log_convert,
    memory_commits,
    repository_of,
    trace_commits,
)
from memories.core.selectors import project_target
from memories.core.services import (
    MemoryDraft,
    memories_added_notify,
    memories_create,
    memory_gate,
    memory_rejection_record,
)
from memories.models import AgentSession, HistorySeed, Memory, MemoryAnchor, SeededCommit
from memories.sessions.prompts import DISTILL_SYSTEM_PROMPT, build_extraction_prompt
from memories.sessions.services import session_submit
from memories.sessions.transcripts import GIT_LOG, cut
from reasoningbank.ai.budget import call_cost_of
from reasoningbank.ai.llm import llm_from_settings, tokens_estimate
from reasoningbank.errors import Forbidden, Rejected

logger = logging.getLogger(__name__)

MESSAGE_OVERHEAD_TOKENS = 32  # the chat format's tokens the budget check counts on a call (budget_rules.py)
DISTILL_MAX_TOKENS = 2048  # what llm_complete gives a distillation call (memories/sessions/services.py)
BODY_MAX = 4000  # a commit body kept in the submitted trace (the compact trace cuts it further)
FILES_MAX = 200  # of one commit in the submitted trace (its compact form shows fewer): a vendored tree is not news
SOURCE = "history-seed"  # the write gate's rejections are counted under this source


@dataclass
class Estimate:
    """What distilling the batches will likely cost: the budget check's own estimate of each call
    (docs/llm-spend.md#how-a-cap-is-kept) priced by the operator's price table."""

    batches: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    provider: str = ""
    model: str = ""
    cost: Decimal | None = None
    currency: str = ""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class SeedBatch:
    session: AgentSession
    commits: int


@dataclass
class SeedResult:
    project: Project
    repository: str
    received: int
    skipped: int  # commits this project already had from the repository
    estimate: Estimate
    batches: list[SeedBatch] = field(default_factory=list)
    episodic: list[Memory] = field(default_factory=list)
    gated: int = 0  # commit messages the write gate kept out (no-LLM path)
    waiting_for_llm: bool = False
    seed: HistorySeed | None = None


def history_seed_submit(
    *,
    principal: Principal,
    project: str | None,
    repository: str,
    commits: Sequence[dict[str, Any]],
    batch_size: int = 20,
    dry_run: bool = False,
) -> SeedResult:
    """Seed ``commits`` (oldest first, in ``memories/code/history.py``'s shape) of ``repository`` into the
    project, or with ``dry_run`` say only what it would submit and cost."""
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"seeding from history needs the '{SCOPE_MEMORIES_WRITE}' scope")
    remote = history_repository(repository)
    target = project_target(principal, project)
    seed = HistorySeed.objects.filter(organization=principal.organization, project=target, repository=remote).first()
    known = set()
    if seed is not None:
        shas = [c["sha"] for c in commits]
        known = set(SeededCommit.objects.filter(seed=seed, sha__in=shas).values_list("sha", flat=True))
    unique = {c["sha"]: c for c in reversed(commits)}  # a sha listed twice: its first listing
    fresh = [c for c in commits if c["sha"] not in known and unique.pop(c["sha"], None) is not None]
    batches = [part for batch in history_batches(fresh, batch_size) for part in _batch_fitted(remote, batch)]
    traces = [history_trace_text(remote, batch) for batch in batches]
    waiting = llm_from_settings().provider == "none"
    result = SeedResult(
        project=target,
        repository=remote,
        received=len(commits),
        skipped=len(commits) - len(fresh),
        estimate=history_estimate(principal, traces),
        waiting_for_llm=waiting,
        seed=seed,
    )
    if dry_run or not commits:
        return result
    with transaction.atomic():
        seed, _ = HistorySeed.objects.select_for_update().get_or_create(
            organization=principal.organization, project=target, repository=remote
        )
        # a request for the same repository that held the lock before this one may have taken some commits
        taken = set(
            SeededCommit.objects.filter(seed=seed, sha__in=[c["sha"] for c in fresh]).values_list("sha", flat=True)
        )
        if taken:
            batches = [kept for batch in batches if (kept := [c for c in batch if c["sha"] not in taken])]
            traces = [history_trace_text(remote, batch) for batch in batches]
            fresh = [c for c in fresh if c["sha"] not in taken]
            result.skipped += len(taken)
        for batch, trace in zip(batches, traces, strict=True):
            key = f"git-log:{batch[0]['sha'][:12]}..{batch[-1]['sha'][:12]}"
            submitted = session_submit(
                principal=principal, session_id=key, outcome=None, trace=trace, project=target.slug,
                trace_format=GIT_LOG,
            )  # fmt: skip
            SeededCommit.objects.bulk_create(
                [SeededCommit(organization=principal.organization, seed=seed, sha=c["sha"], session=submitted.session)
                 for c in batch],
                ignore_conflicts=True,
            )  # fmt: skip
            result.batches.append(SeedBatch(submitted.session, len(batch)))
            if waiting:
                made, gated = _episodic_create(principal, target, remote, batch)
                result.episodic += made
                result.gated += gated
        seed.last_commit = commits[-1]["sha"]
        seed.commits += len(fresh)
        seed.batches += len(batches)
        seed.episodic += len(result.episodic)
        seed.updated_at = timezone.now()
        seed.save()
        audit_record(
            organization=principal.organization,
            actor=principal,
            verb="history.seed",
            target=seed,
            data={
                "repository": remote,
                "commits": len(fresh),
                "batches": len(batches),
                "episodic": len(result.episodic),
            },
        )
    if result.episodic:
        memories_added_notify(target, len(result.episodic))
    result.seed = seed
    return result


def history_repository(text: str) -> str:
    """A repository named by its remote in any spelling, or already normalised (``host/owner/name``);
    anything else is a 400 naming the fix."""
    remote = repository_of(text)
    if not remote:  # the right shape (a text), not a remote: refused like content the service cannot read
        raise Rejected(
            "repository must be the repository's git remote (e.g. git@github.com:acme/api.git or github.com/acme/api)",
            field="repository",
            code="rejected_not_a_remote",
        )
    return remote


def _batch_fitted(repository: str, batch: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``batch`` halved until each part's trace is within ``SESSION_TRACE_MAX_BYTES`` (commits with long
    bodies or thousands of files); a commit too large alone keeps its head: the compact trace would cut it."""
    if len(history_trace_text(repository, batch).encode("utf-8")) <= settings.SESSION_TRACE_MAX_BYTES:
        return [batch]
    if len(batch) == 1:
        commit = batch[0]
        return [[{**commit, "body": cut(str(commit.get("body") or ""), 1000), "files": commit["files"][:30]}]]
    half = len(batch) // 2
    return _batch_fitted(repository, batch[:half]) + _batch_fitted(repository, batch[half:])


def history_trace_text(repository: str, commits: Sequence[dict[str, Any]]) -> str:
    """The ``git-log`` submission of one batch: the repository, then a commit a line (bodies cut)."""
    lines = [json.dumps({"repository": repository})]
    for commit in commits:
        kept = {**commit, "body": cut(str(commit.get("body") or ""), BODY_MAX), "files": commit["files"][:FILES_MAX]}
        lines.append(json.dumps(kept, ensure_ascii=False))
    return "\n".join(lines)


def history_estimate(principal: Principal, traces: Sequence[str]) -> Estimate:
    """The likely tokens of distilling each batch — the prompt distillation will send and the usual reply of
    the organization's recent distillations — and their price under the configured model."""
    llm = llm_from_settings()
    estimate = Estimate(batches=len(traces), provider=llm.provider, model=llm.model or "")
    for trace in traces:
        prompt = build_extraction_prompt(outcome="unknown", trace=git_log_convert(trace).trace)
        cost = call_cost_of(
            principal.organization.pk,
            purpose="distill",
            system=DISTILL_SYSTEM_PROMPT,
            prompt=prompt,
            max_tokens=DISTILL_MAX_TOKENS,
        )
        sent = tokens_estimate(DISTILL_SYSTEM_PROMPT) + tokens_estimate(prompt) + MESSAGE_OVERHEAD_TOKENS
        estimate.input_tokens += sent
        estimate.output_tokens += max(0, cost.likely - sent)
    if llm.provider != "none" and traces:
        priced = PriceTable().cost(llm.provider, llm.model or "", estimate.input_tokens, estimate.output_tokens)
        if priced is not None:
            estimate.cost, estimate.currency = priced
    return estimate


# --- without an LLM: commit messages as episodic memories ----------------------------------------


def _episodic_create(
    principal: Principal, project: Project, repository: str, commits: Sequence[dict[str, Any]]
) -> tuple[list[Memory], int]:
    """Each commit message (merges aside) the write gate lets in, as an episodic memory anchored to the
    files the commit changed; the instruction-smell screening of ``memories_create`` applies as to any write."""
    made: list[Memory] = []
    gated = 0
    for commit in commits:
        if len(commit.get("parents") or []) > 1 or not commit.get("files"):
            continue
        draft = _commit_draft(commit)
        rejection = memory_gate(draft)
        if rejection is not None:
            gated += 1
            memory_rejection_record(
                organization=principal.organization, actor=principal, project=project, source=SOURCE,
                reason=rejection.reason, field=rejection.field, message=rejection.message, title=draft.title,
                data={"commit": commit["sha"]},
            )  # fmt: skip
            continue
        memory = memories_create(principal=principal, drafts=[draft], project=project)[0]
        trace = TraceCommit(
            sha=commit["sha"],
            files=[(str(f.get("status") or "M"), f["path"], list(f.get("symbols") or [])) for f in commit["files"]],
        )
        history_anchors_create(memory, repository, commit_anchors([trace]))
        made.append(memory)
    return made, gated


def _commit_draft(commit: dict[str, Any]) -> MemoryDraft:
    subject = str(commit.get("subject") or "").strip()
    body = cut(str(commit.get("body") or "").strip(), BODY_MAX)
    lines = [body] if body else [subject]
    if commit.get("reverts"):
        lines.append(f"(reverts commit {commit['reverts'][:12]})")
    if commit.get("fixes"):
        lines.append(f"(fixes commit {', '.join(sha[:12] for sha in commit['fixes'])})")
    pull = commit.get("pr")
    if isinstance(pull, dict) and pull.get("number"):
        lines.append(f"Pull request #{pull['number']}: {pull.get('title') or ''}")
    return MemoryDraft(
        title=subject[:200],
        description=f"Commit {commit['sha'][:12]} ({str(commit.get('date') or '')[:10]}): {subject}"[:1000],
        content="\n\n".join(lines),
        outcome="failure" if commit.get("reverts") else "success",
        tags=["git-history"],
        kind=Memory.KIND_EPISODIC,
    )


# --- anchors -------------------------------------------------------------------------------------


def history_anchors_create(memory: Memory, repository: str, anchors: Sequence[dict[str, str]]) -> list[MemoryAnchor]:
    """Store ``anchors`` (``{path, symbol, commit}``) on ``memory``. The one place seeding writes anchors:
    it becomes a call of the anchors' own write service once that exists."""
    rows = [
        MemoryAnchor(
            organization_id=memory.organization_id,
            memory=memory,
            repository=repository,
            path=path_normalise(anchor["path"])[:PATH_MAX],
            symbol=anchor.get("symbol", "")[:SYMBOL_MAX],
            commit=anchor.get("commit", "")[:64],
        )
        for anchor in anchors
        if path_normalise(anchor.get("path", ""))
    ]
    return MemoryAnchor.objects.bulk_create(rows)


def history_distilled_anchor(session: AgentSession, memories: Sequence[Memory]) -> int:
    """Anchor each memory distilled from a ``git-log`` session to the files of the commits it cites
    (memories/code/history_trace.py's ``memory_commits``); nothing for any other session."""
    if not memories or not session.trace.startswith(HEADER):
        return 0
    commits = trace_commits(session.trace)
    seeded = SeededCommit.objects.filter(session=session).select_related("seed").first()
    repository = seeded.seed.repository if seeded is not None else _header_repository(session.trace)
    count = 0
    for memory in memories:
        found = memory_commits(f"{memory.title}\n{memory.description}\n{memory.content}", commits)
        count += len(history_anchors_create(memory, repository, commit_anchors(found)))
    return count


def history_distilled_receiver(sender: Any, *, session: AgentSession, memories: Sequence[Memory], **_: Any) -> None:
    history_distilled_anchor(session, memories)


def _header_repository(trace: str) -> str:
    first = trace.split("\n", 1)[0]
    marker = " of "
    if marker not in first:
        return ""
    return repository_of(first.split(marker, 1)[1].split(",", 1)[0])
