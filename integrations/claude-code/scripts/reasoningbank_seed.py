#!/usr/bin/env python3
"""Seed the project's ReasoningBank memory from this repository's git history (the plugin's
``/reasoningbank:seed-from-git`` command; docs/code-memory.md#seeding-from-history).

Reads the git log here (messages, changed paths and symbols, fix and revert chains; pull requests from an
exported JSON Lines file with --prs), and posts the commits to ``POST /api/v1/code/history`` in requests of
at most 500. The service skips the commits it already has from this repository, so a re-run reads only the
commits after the last one seeded (the whole history again after a force-push). ``--dry-run`` prints the
commits, batches and LLM budget and submits nothing; ``--status`` prints how far the distillation got.

Configuration, as the plugin's hooks: REASONINGBANK_URL (default http://127.0.0.1:8000),
REASONINGBANK_TOKEN, REASONINGBANK_PROJECT (when the token reaches several projects). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reasoningbank_git_history as history

PATH = "/api/v1/code/history"
COMMITS_MAX = 500  # per request: the service's limit


def service(method: str, body: dict[str, Any] | None = None, query: dict[str, str] | None = None) -> dict[str, Any]:
    url = os.environ.get("REASONINGBANK_URL", "http://127.0.0.1:8000").rstrip("/")
    token = os.environ.get("REASONINGBANK_TOKEN", "")
    if not token:
        raise SystemExit("set REASONINGBANK_TOKEN to an API token with the memories:write scope")
    address = f"{url}{PATH}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    request = urllib.request.Request(
        address,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                 "User-Agent": "reasoningbank-claude-code-seed"},
        method=method,
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=300) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as exc:
        if exc.code == 404 and method == "GET":
            return {}
        try:
            detail = json.load(exc).get("detail", "")
        except (ValueError, AttributeError, OSError):
            detail = ""
        raise SystemExit(f"{address} answered {exc.code}: {str(detail)[:500]}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit(f"cannot reach {url} ({getattr(exc, 'reason', exc)}): check REASONINGBANK_URL") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=".", help="the repository (default: the working directory)")
    parser.add_argument("--repository", default="", help="its remote (default: origin)")
    parser.add_argument("--since", default="", help="read the commits after this one")
    parser.add_argument("--max-commits", type=int, default=0, help="at most the newest N commits")
    parser.add_argument("--prs", default="", help="pull requests as JSON Lines: number, title, body, merge_commit")
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--no-symbols", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--status", action="store_true")
    args = parser.parse_args(argv)
    project = os.environ.get("REASONINGBANK_PROJECT") or None
    remote = args.repository or history.git_remote(args.repo)
    if not remote:
        raise SystemExit("this repository has no remote: name it with --repository (e.g. github.com/acme/api)")
    where = {"repository": remote, **({"project": project} if project else {})}
    state = service("GET", query=where)
    if args.status:
        print(state.get("message", "nothing seeded from this repository yet"), state.get("batches_by_status", ""))
        return 0
    last = state.get("last_commit", "")
    since = args.since or (last if last and history.git_is_ancestor(args.repo, last) else "")
    try:
        commits = history.git_log_read(args.repo, since=since, max_commits=args.max_commits,
                                       symbols=not args.no_symbols)  # fmt: skip
    except history.GitError as exc:
        raise SystemExit(f"git could not read {args.repo}: {exc}") from None
    if not commits:
        print("No new commit to seed.")
        return 0
    pulls = {}
    if args.prs:
        with open(args.prs, encoding="utf-8") as handle:
            pulls = history.pull_requests_read(handle)
    history.history_chains(commits, pulls)
    totals = {"received": 0, "skipped": 0, "batches": 0, "tokens": 0, "episodic": 0}
    cost, currency, llm = 0.0, "", ""
    for start in range(0, len(commits), COMMITS_MAX):
        body = {**where, "commits": commits[start : start + COMMITS_MAX], "batch_size": args.batch_size,
                "dry_run": args.dry_run}  # fmt: skip
        answer = service("POST", body)
        estimate = answer["estimate"]
        totals["received"] += answer["received"]
        totals["skipped"] += answer["skipped"]
        totals["batches"] += estimate["batches"]
        totals["tokens"] += estimate["tokens"]
        totals["episodic"] += answer["episodic_memories"]
        cost += float(estimate["estimated_cost"] or 0)
        currency, llm = estimate["currency"], f"{estimate['provider']} {estimate['model']}".strip()
        if not args.dry_run:
            print(f"  {min(start + COMMITS_MAX, len(commits))}/{len(commits)} commits: {answer['message']}")
    priced = f", ≈ {cost:.4f} {currency}" if currency else ""
    print(
        f"{'Dry run: ' if args.dry_run else ''}{totals['received']} commit(s), {totals['skipped']} already seeded; "
        f"{totals['batches']} batch(es) for {llm}: ≈ {totals['tokens']:,} tokens{priced}"
    )
    if not args.dry_run:
        print("Follow the distillation with --status (or GET /api/v1/code/history).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
