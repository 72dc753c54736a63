"""``retrieval.py --simulate-recall N``: a month of automatic recall before the measured pass (bench/README.md,
"After a month of automatic recall")."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from _locomo import Conversation
from _product import embedder_settings
from common import log

# the Claude Code plugin's per-prompt recall as it asks (integrations/claude-code/hooks/reasoningbank_hooks/budget.py)
HOOK_PROMPT = {"limit": 3, "token_budget": 600, "min_similarity": 0.35, "include_summaries": False, "inject": True}


def recall_simulate(bank: Any, conversations: Sequence[Conversation], *, times: int, explicit: bool) -> dict[str, Any]:
    """A month of automatic recall before the measured pass: every question asked ``times`` times, in one
    random order (seeded), each ask a session of its own, through the hook's per-prompt search (``inject``,
    the plugin's caps) — or, with ``explicit``, as explicit searches (usage signals on what they return: how
    the hook's recall counted before impressions). Then the daily job. Kept: the measured pass sees it."""
    import random

    from memories.search.contracts import SearchInput, memory_search_run
    from memories.tasks import signals_rollup_daily
    from reasoningbank.db_threads import write_behind_wait

    asks = [(conv, q) for conv in conversations for q in conv.queries for _ in range(times)]
    random.Random(41).shuffle(asks)
    shown = 0
    with embedder_settings(bank.kind):
        for n, (conv, q) in enumerate(asks):
            hook = {} if explicit else {**HOOK_PROMPT, "session_id": f"sim-{n}", "exclude_seen": True}
            args = SearchInput(query=q.question, project=conv.sample_id, min_confidence=0.0, **hook)
            shown += len(memory_search_run(bank.principals[conv.sample_id], args).memories)
        write_behind_wait()
        daily = signals_rollup_daily()
    return {"asks": len(asks), "returned": shown, "explicit": explicit, "daily_job": daily}


def shown_and_demoted(org: Any) -> tuple[int, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(SUM(impression_count), 0), (SELECT COUNT(DISTINCT memory_id) FROM memories_memorysignal "
            "WHERE organization_id = %s AND NOT positive) FROM memories_memory WHERE organization_id = %s",
            [org.id, org.id],
        )
        shown, demoted = cursor.fetchone()
    return int(shown), int(demoted)


def recall_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--simulate-recall",
        type=int,
        default=0,
        metavar="N",
        help="before measuring, ask every question N times through the hook's per-prompt recall (random order, "
        "kept), then run the daily job: the figures after a month of automatic recall; reset afterwards",
    )
    parser.add_argument(
        "--simulate-explicit",
        action="store_true",
        help="with --simulate-recall, ask as explicit searches instead (each a use of what it returns)",
    )


def recall_run(args: argparse.Namespace, bank: Any, conversations: Sequence[Conversation]) -> dict[str, Any]:
    """``recall_simulate`` as the command line asked, logged with what it left: impressions and demotions."""
    simulated = recall_simulate(bank, conversations, times=args.simulate_recall, explicit=args.simulate_explicit)
    impressions, demoted = shown_and_demoted(bank.org)
    how = "explicit searches" if args.simulate_explicit else "the hook"
    log(
        f"  simulated: {simulated['asks']} asks ({how}), {simulated['returned']} memories returned, {impressions} "
        f"impressions counted, {demoted} memories demoted; the daily job: {simulated['daily_job']}"
    )
    return {**simulated, "impressions": impressions, "demoted": demoted}


def recall_variant(args: argparse.Namespace) -> str:
    """The results file's suffix: a simulated month keeps its own figures."""
    if not args.simulate_recall:
        return ""
    return f"-after-{args.simulate_recall}x-{'explicit' if args.simulate_explicit else 'recall'}"
