"""Code-aware memory on a real repository's history (docs/code-memory.md): seed a bank from the first
80 % of the commits, then replay the rest in order — before each fix commit, the agent opens the files
the fix changes (the PreToolUse recall), and after each commit its changes are reported (staleness) —
and measure:

(a) recall@3: among the (fix, file) pairs whose fix changes a symbol that earlier seeded commits touched,
    the share where the recall of the file, before the fix, put a memory of one of those earlier commits
    in its first three (beside it, the same against every earlier commit that touched the file);
(b) the tokens injected per session (one session per fix: every file it opens, the ledger shared);
(c) the staleness flags' precision and recall against what the history really did to each seeded
    anchor on a symbol (a later commit's hunk named its symbol in its file, followed through renames, or
    deleted the file), over the whole history after each anchor's commit;
(d) the recall's latency, p50 / p99, in process (the service's part of the hook);

and beside them, for ``memory_search``'s ``paths`` (docs/code-memory.md#browse-by-code): recall@3 of a
search for the fix's subject (a stand-in for the task the agent was given) without ``paths``, and naming
the file with each path boost of ``--boosts``.

The history is the export in the shared folder beside the checkout (shared/eval/git-history/: pallets/click,
BSD-3-Clause, read from there, not copied), or another of the same format (bench/_code_history.py).
Against a dedicated embedded PostgreSQL (``RB_DATA_DIR=.data/bench-code``), the product's default
embedder (``minilm-onnx``) and no LLM (seeding's path without one). Each step calls the product's
service where this checkout has it, else a stand-in (bench/_code_steps.py): the report names which.

    .venv/bin/python bench/code_memory.py                                   # the figures in bench/README.md
    .venv/bin/python bench/code_memory.py --history other.jsonl --fixes 50  # another history, 50 fixes
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._code_history import history_read, replay, stale_truth
from bench._code_steps import (
    anchor_states,
    anchors_read,
    history_order,
    memories_by_commit,
    recall_open,
    report_commit,
    search_top,
    seed_history,
)
from bench.common import REPO, RESULTS_DIR, Latency, configure_environment, django_setup, log, machine_info, write_json

ORG = "bench-code"
PROJECT = "click"
HISTORY_CANDIDATES = [
    REPO.parent / "shared" / "eval" / "git-history" / "pallets-click.jsonl",
    REPO.parent.parent / "shared" / "eval" / "git-history" / "pallets-click.jsonl",
]


def bank_make(repository: str) -> Any:
    """A fresh organization with one project tied to the repository, and a token restricted to it (as
    the plugin's): the principal every step acts as."""
    from accounts.access import principal_for_token
    from accounts.services import organization_create, project_create, token_create
    from bench._product import bank_reset

    bank_reset(ORG)
    org = organization_create(slug=ORG, name="Benchmark code memory", plan="enterprise")
    project = project_create(organization=org, slug=PROJECT, actor=None)
    project.repository = repository
    project.save(update_fields=["repository"])
    token, _ = token_create(organization=org, label="bench", projects=[project])
    return principal_for_token(token)


def ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def staleness_scores(
    truth: dict[int, str], states: dict[int, str], symbol_ids: set[int], facts: dict[int, Any]
) -> dict[str, Any]:
    """Precision and recall of the flags (code_changed or deleted) on symbol anchors, and how the
    deletions of whole-file anchors were caught; the anchors judged wrongly (a few), to look into."""
    stale = {"code_changed", "deleted"}
    flagged = {i for i in symbol_ids if states.get(i) in stale}
    really = {i for i in symbol_ids if truth.get(i) in stale}
    files = set(truth) - symbol_ids
    deleted_flag = {i for i in files if states.get(i) == "deleted"}
    deleted_true = {i for i in files if truth.get(i) == "deleted"}
    return {
        "symbol_anchors": len(symbol_ids),
        "flagged": len(flagged),
        "really_changed": len(really),
        "precision": ratio(len(flagged & really), len(flagged)),
        "recall": ratio(len(flagged & really), len(really)),
        "file_anchors": len(files),
        "file_deleted_precision": ratio(len(deleted_flag & deleted_true), len(deleted_flag)),
        "file_deleted_recall": ratio(len(deleted_flag & deleted_true), len(deleted_true)),
        "wrong": [
            {**vars(facts[i]), "state": states.get(i), "truth": truth.get(i)}
            for i in sorted((flagged ^ really) | (deleted_flag ^ deleted_true))[:20]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=Path, help="the export (JSON lines); default: the shared pallets/click")
    parser.add_argument("--repository", default="", help="its normalised remote (default: from its first line)")
    parser.add_argument("--commits", type=int, default=0, help="only the first N commits (0: all; a quick check)")
    parser.add_argument("--seed-share", type=float, default=0.8, help="the share of commits seeded (0.8)")
    parser.add_argument("--fixes", type=int, default=0, help="replay until this many fixes were measured (0: all)")
    parser.add_argument(
        "--recall-only",
        action="store_true",
        help="report no commit for staleness: (a), (b), (d) in a third of the time",
    )
    parser.add_argument("--limit", type=int, default=3, help="memories a recall injects at most (3)")
    parser.add_argument("--boosts", default="1,1.25,1.5,2,3", help="search's path boosts compared (1,1.25,1.5,2,3)")
    parser.add_argument("--token-budget", type=int, default=600, help="a recall's block, in tokens (600)")
    args = parser.parse_args()

    os.environ.setdefault("RB_DATA_DIR", str(REPO / ".data" / "bench-code"))
    env = configure_environment()
    history = args.history or next((p for p in HISTORY_CANDIDATES if p.exists()), None)
    if history is None or not history.exists():
        sys.exit("no history: give --history PATH (one commit a JSON line: bench/_code_history.py says the fields)")
    django_setup()
    from django.conf import settings

    commits = history_read(history)
    commits = commits[: args.commits] if args.commits else commits
    first = commits[0].raw.get("repo", "") if commits else ""
    repository = args.repository or (f"github.com/{first}" if first else "github.com/example/repository")
    cut = int(len(commits) * args.seed_share)
    seeded, replayed = commits[:cut], commits[cut:]
    history_order(commits)
    log(f"{history.name}: {len(commits)} commits; seeding {len(seeded)}, replaying {len(replayed)}")
    log(f"embedder {settings.EMBEDDER}, LLM {settings.LLM_PROVIDER}, data {env['RB_DATA_DIR']}")

    principal = bank_make(repository)
    seed = seed_history(principal, PROJECT, repository, seeded)
    log(f"seeded ({seed.how}): {seed.memories} memories, {seed.anchors} anchors in {seed.seconds:.0f} s")
    facts = anchors_read(principal)
    by_commit = memories_by_commit(principal)
    started = time.perf_counter()
    report_how = {report_commit(principal, repository, c) for c in seeded} if not args.recall_only else {"skipped"}
    took = time.perf_counter() - started
    log(f"seeded commits reported for staleness ({', '.join(sorted(report_how))}) in {took:.0f} s")

    hits = hits_file = cases_symbol = cases_file = 0
    latencies: list[float] = []
    tokens_per_session: list[int] = []
    recall_how: set[str] = set()
    boosts: list[float | None] = [None, *(float(b) for b in args.boosts.split(",") if b.strip())]
    # by symbol, by file, and how often the search's best without paths stays in the first three
    search_hits = {boost: [0, 0, 0] for boost in boosts}
    fixes = 0
    for commit, cases in replay(seeded, replayed):
        if cases and (not args.fixes or fixes < args.fixes):
            fixes += 1
            session, tokens = f"bench-{commit.sha[:12]}", 0
            for case in cases:
                got = recall_open(
                    principal,
                    session=session,
                    repository=repository,
                    path=case.path,
                    limit=args.limit,
                    token_budget=args.token_budget,
                )
                recall_how.add(got.how)
                latencies.append(got.ms)
                tokens += got.tokens
                top = set(got.ids[:3])
                if case.related_by_symbol:
                    cases_symbol += 1
                    hits += bool(top & _memories(case.related_by_symbol, by_commit))
                if case.related_by_file:
                    cases_file += 1
                    hits_file += bool(top & _memories(case.related_by_file, by_commit))
                best: list[str] = []
                for boost in boosts if case.related_by_file else ():
                    top3 = search_top(principal, query=commit.subject, path=case.path, boost=boost)
                    best = best or top3[:1]  # the first boost is None: the search without paths
                    found = set(top3)
                    search_hits[boost][0] += bool(found & _memories(case.related_by_symbol, by_commit))
                    search_hits[boost][1] += bool(found & _memories(case.related_by_file, by_commit))
                    search_hits[boost][2] += bool(set(best) <= found)
            tokens_per_session.append(tokens)
        if not args.recall_only:
            report_how.add(report_commit(principal, repository, commit))

    truth = stale_truth(facts, commits)
    states = anchor_states(principal)
    stale = staleness_scores(truth, states, {f.id for f in facts if f.symbol}, {f.id: f for f in facts})
    latency = Latency.of(latencies)
    result = {
        "history": str(history),
        "repository": repository,
        "commits": len(commits),
        "seeded_commits": len(seeded),
        "replayed_commits": len(replayed),
        "fixes_measured": fixes,
        "how": {"seed": seed.how, "staleness": sorted(report_how), "recall": sorted(recall_how)},
        "seed": {"memories": seed.memories, "anchors": seed.anchors, "seconds": round(seed.seconds, 1)},
        "recall_at_3": {
            "by_symbol": ratio(hits, cases_symbol),
            "cases_by_symbol": cases_symbol,
            "by_file": ratio(hits_file, cases_file),
            "cases_by_file": cases_file,
        },
        "tokens_per_session": {
            "mean": round(statistics.fmean(tokens_per_session), 1) if tokens_per_session else None,
            "p50": statistics.median(tokens_per_session) if tokens_per_session else None,
            "max": max(tokens_per_session, default=None),
            "sessions": len(tokens_per_session),
        },
        "staleness": stale,
        "search_recall_at_3": {
            ("without paths" if boost is None else f"paths, boost {boost:g}"): {
                "by_symbol": ratio(found[0], cases_symbol),
                "by_file": ratio(found[1], cases_file),
                "best_without_paths_kept": ratio(found[2], cases_file),
            }
            for boost, found in search_hits.items()
        },
        "recall_latency_ms": latency.as_dict(),
        "embedder": settings.EMBEDDER,
        "llm": settings.LLM_PROVIDER,
        "machine": machine_info(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    write_json(RESULTS_DIR / "code_memory.json", result)
    log("")
    log(f"steps: seed {seed.how}, staleness {'/'.join(sorted(report_how))}, recall {'/'.join(sorted(recall_how))}")
    rc = result["recall_at_3"]
    log(
        f"(a) recall@3 by symbol {rc['by_symbol']} over {cases_symbol} (fix, file) cases; "
        f"by file {rc['by_file']} over {cases_file}"
    )
    tps = result["tokens_per_session"]
    log(f"(b) tokens injected per session: mean {tps['mean']}, p50 {tps['p50']}, max {tps['max']} ({fixes} sessions)")
    log(
        f"(c) staleness on {stale['symbol_anchors']} symbol anchors: precision {stale['precision']}, recall "
        f"{stale['recall']} ({stale['flagged']} flagged, {stale['really_changed']} really changed); whole-file "
        f"anchors' deletions: precision {stale['file_deleted_precision']}, recall {stale['file_deleted_recall']}"
    )
    log(f"(d) recall latency in process: p50 {latency.p50:.1f} ms, p99 {latency.p99:.1f} ms over {latency.n} calls")
    for name, found in result["search_recall_at_3"].items():
        log(
            f"search for the fix's subject, {name}: recall@3 by symbol {found['by_symbol']}, by file "
            f"{found['by_file']}; its best without paths still in the first three {found['best_without_paths_kept']}"
        )
    log(f"load average {result['load_average']}; results in bench/results/code_memory.json")


def _memories(shas: frozenset[str], by_commit: dict[str, set[str]]) -> set[str]:
    return {memory for sha in shas for memory in by_commit.get(sha, ())}


if __name__ == "__main__":
    main()
