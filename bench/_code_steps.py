"""The three product steps bench/code_memory.py replays history through, one function each, each calling
the service that does it in the product: seeding a bank from history (``history_seed_submit``, its path
without an LLM), a commit's changes reported for staleness (``code_changes_report``) and the PreToolUse
recall of a file about to be opened (``memory_recall_run``, what the plugin's hook calls). Where one of
them is not in this checkout, a stand-in that follows docs/code-memory.md's rules takes its place, and
the report says so (``how``): the figures are the product's only when every step says ``service``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bench._code_history import AnchorFact, Commit, FileChange

STATUSES = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}
SYMBOLS_PER_FILE = 3  # a seeded memory names up to this many symbols of a file, else the file itself


# --- seeding --------------------------------------------------------------------------------------


@dataclass
class Seeded:
    memories: int
    anchors: int
    seconds: float
    how: str  # "service" or "stand-in"


def seed_history(principal: Any, project: str, repository: str, commits: list[Commit]) -> Seeded:
    """The first commits into the project's bank, as `manage.py memories_seed_from_git` would without an
    LLM: each commit message the write gate lets in becomes an episodic memory anchored to its files."""
    from memories.models import Memory
    from memories.models_code import MemoryAnchor

    started = time.perf_counter()
    try:
        from memories.code.history import history_jsonl_read
        from memories.code.services_seed import history_seed_submit
    except ImportError:
        how = "stand-in"
        for commit in commits:
            _seed_one(principal, project, repository, commit)
    else:
        how = "service"
        shaped = history_jsonl_read(json.dumps(c.raw) for c in commits)
        for start in range(0, len(shaped), 200):  # one request's worth at a time, as the plugin sends them
            history_seed_submit(
                principal=principal, project=project, repository=repository, commits=shaped[start : start + 200]
            )
    org = principal.organization
    return Seeded(
        memories=Memory.objects.filter(organization=org, state=Memory.STATE_ACTIVE).count(),
        anchors=MemoryAnchor.objects.filter(organization=org).count(),
        seconds=time.perf_counter() - started,
        how=how,
    )


def _seed_one(principal: Any, project: str, repository: str, commit: Commit) -> None:
    from memories.core.contracts import RecordInput, memory_record_run
    from memories.models_code import MemoryAnchor
    from reasoningbank.errors import ServiceError

    kept = [change for change in commit.files if change.status != "D"]
    if not kept or not commit.subject.strip():
        return
    paths = ", ".join(change.path for change in kept[:3]) + (" …" if len(kept) > 3 else "")
    body = commit.body.strip()[:2000]
    content = "\n\n".join(part for part in (commit.subject.strip(), body, f"Changed: {paths}") if part)
    try:
        out, created = memory_record_run(
            principal,
            RecordInput(
                title=commit.subject.strip()[:200],
                description=f"When changing {paths}"[:500],
                content=content,
                outcome="success",
                kind="episodic",
                project=project,
            ),
        )
    except ServiceError:  # the write gate kept it out
        return
    if not created:
        return
    for change in kept:
        symbols = change.symbols if 0 < len(change.symbols) <= SYMBOLS_PER_FILE else [""]
        for symbol in symbols:
            MemoryAnchor.objects.create(
                organization=principal.organization,
                memory_id=out.id,
                repository=repository,
                path=change.path,
                symbol=symbol,
                commit=commit.sha,
            )


def anchors_read(principal: Any) -> list[AnchorFact]:
    from memories.models_code import MemoryAnchor

    rows = MemoryAnchor.objects.filter(organization=principal.organization).exclude(path="")
    return [AnchorFact(a.id, a.path, a.symbol, a.commit) for a in rows.only("id", "path", "symbol", "commit")]


def memories_by_commit(principal: Any) -> dict[str, set[str]]:
    """sha → the memories anchored at that commit: which memory stands for which earlier change."""
    from memories.models_code import MemoryAnchor

    found: dict[str, set[str]] = {}
    for memory_id, sha in MemoryAnchor.objects.filter(organization=principal.organization).values_list(
        "memory_id", "commit"
    ):
        found.setdefault(sha, set()).add(memory_id)
    return found


# --- staleness ------------------------------------------------------------------------------------


def report_commit(principal: Any, repository: str, commit: Commit) -> str:
    """One commit's changed files, hunks (old side) and symbols reported as the git hook reports them;
    answers how ("service" or "stand-in")."""
    try:
        from memories.code.services_staleness import code_changes_report
        from memories.code.staleness import FileChange as Change
        from memories.code.staleness import Hunk
    except ImportError:
        _report_stand_in(principal, repository, commit)
        return "stand-in"
    files = [
        Change(
            status=STATUSES[change.status],
            path=change.path,
            old_path=change.old_path,
            hunks=tuple(Hunk(h.old_start, h.old_lines) for h in change.hunks),
            # the export names symbols of Python files only (git's funcname); other files: not read
            symbols=change.symbols if change.path.endswith(".py") else None,
        )
        for change in commit.files
    ]
    if files:
        code_changes_report(
            principal=principal, repository=repository, commit=commit.sha, committed_at=commit.date, files=files
        )
    return "service"


def _report_stand_in(principal: Any, repository: str, commit: Commit) -> None:
    """docs/code-memory.md#anchors's states without the staleness service: a deleted file's anchors
    ``deleted``, a renamed file's anchors moved, an anchored symbol a later hunk names ``code_changed``."""
    from memories.models_code import MemoryAnchor

    for change in commit.files:
        anchors = MemoryAnchor.objects.filter(
            organization=principal.organization, repository=repository, path=change.before
        ).exclude(commit=commit.sha)
        for anchor in anchors:
            if _anchor_younger(anchor.commit, commit):
                continue
            state = anchor.state
            if change.status == "D":
                state = MemoryAnchor.STATE_DELETED
            elif state == MemoryAnchor.STATE_CURRENT and anchor.symbol and _touched(anchor.symbol, change):
                state = MemoryAnchor.STATE_CODE_CHANGED
            if state != anchor.state:
                anchor.state, anchor.changed_commit = state, commit.sha
            if change.status == "R":
                anchor.path = change.path
            anchor.save(update_fields=["state", "changed_commit", "path"])


_ORDER: dict[str, int] = {}


def history_order(commits: list[Commit]) -> None:
    """The commits' order, for the stand-in's "only a later commit counts"."""
    _ORDER.update({c.sha: c.index for c in commits})


def _anchor_younger(anchor_commit: str, commit: Commit) -> bool:
    return _ORDER.get(anchor_commit, -1) >= commit.index


def _touched(symbol: str, change: FileChange) -> bool:
    return any(name == symbol or name.startswith(symbol + ".") for name in change.symbols)


def anchor_states(principal: Any) -> dict[int, str]:
    from memories.models_code import MemoryAnchor

    return dict(MemoryAnchor.objects.filter(organization=principal.organization).values_list("id", "state"))


# --- recall at PreToolUse -------------------------------------------------------------------------


@dataclass
class Recalled:
    ids: list[str]
    tokens: int  # the injected block, four characters a token (as the hooks count it)
    ms: float
    how: str


def recall_open(principal: Any, *, session: str, repository: str, path: str, limit: int, token_budget: int) -> Recalled:
    """What the PreToolUse hook injects when the agent opens ``path`` (a Read or an Edit of it) in this
    session: the memories anchored to the file (then its directory), framed, within the session's ledger
    and the token budget."""
    try:
        from memories.code.contracts_recall import RecallInput, memory_recall_run
    except ImportError:
        return _recall_stand_in(principal, session=session, path=path, limit=limit, token_budget=token_budget)
    started = time.perf_counter()
    out = memory_recall_run(
        principal,
        RecallInput(session_id=session, repository=repository, path=path, limit=limit, token_budget=token_budget),
    )
    ms = (time.perf_counter() - started) * 1000
    block = out.injection_block or ""
    return Recalled([m.id for m in out.memories], -(-len(block) // 4) if block else 0, ms, "service")


def _recall_stand_in(principal: Any, *, session: str, path: str, limit: int, token_budget: int) -> Recalled:
    """Without the recall operation: an injection search restricted to the memories anchored to the file
    (``paths_only``), then to its directory, the path as the query (all a Read's hook knows)."""
    import posixpath

    from memories.search.contracts import SearchInput, memory_search_run

    started = time.perf_counter()
    out = None
    for where in (path, posixpath.dirname(path) + "/" if posixpath.dirname(path) else ""):
        if not where:
            break
        out = memory_search_run(
            principal,
            SearchInput(
                query=path,
                paths=[where],
                paths_only=True,
                inject=True,
                exclude_seen=True,
                session_id=session,
                limit=limit,
                token_budget=token_budget,
                min_confidence=0.0,
                include_summaries=False,
            ),
        )
        if out.memories:
            break
    ms = (time.perf_counter() - started) * 1000
    block = (out.injection_block or "") if out is not None and out.memories else ""
    ids = [m.id for m in out.memories] if out is not None else []
    return Recalled(ids, -(-len(block) // 4) if block else 0, ms, "stand-in")


# --- search with the file's path ------------------------------------------------------------------


def search_top(principal: Any, *, query: str, path: str, boost: float | None, limit: int = 3) -> list[str]:
    """``memory_search``'s top ids for ``query`` — with ``boost``, naming ``path`` in ``paths`` and that
    path boost; without, as before paths existed — read-only (the selector, as the dashboard searches: no
    usage signal, so one search cannot change the next's ranking)."""
    from memories.code.paths import path_selection
    from memories.embedding import query_embed
    from memories.search import selectors, selectors_code

    search = selectors.SearchQuery(
        query=query, limit=limit, min_confidence=0.0, mode="deep",
        paths=path_selection([path]) if boost is not None else selectors.PathSelection(),
    )  # fmt: skip
    # the boost is read where the hits are boosted (memories/search/selectors_code.py)
    kept = selectors_code.ANCHOR_PATH_BOOST
    selectors_code.ANCHOR_PATH_BOOST = boost if boost is not None else kept  # type: ignore[misc]
    try:
        result = selectors.memory_search(principal, search, query_vector=query_embed(query))
    finally:
        selectors_code.ANCHOR_PATH_BOOST = kept  # type: ignore[misc]
    return [hit.memory.id for hit in result.hits]
