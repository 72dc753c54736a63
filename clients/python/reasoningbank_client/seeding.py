"""Seeding a project's bank from a local repository's history (docs/sdks.md#seeding-from-git-history): the
git log read on this machine (``git_history.py``, the service's own reader), then posted to
``POST /api/v1/code/history`` in requests of at most ``COMMITS_MAX`` commits. The service skips the commits
it already has from the repository, so a re-run reads only those after the last one seeded (the whole
history again when a force-push dropped that one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from . import git_history

COMMITS_MAX = 500  # the service's limit per request


def history_commits(
    repo: str | os.PathLike[str],
    *,
    last_commit: str = "",
    since: str = "",
    max_commits: int = 0,
    prs: str | os.PathLike[str] | None = None,
    symbols: bool = True,
) -> list[dict[str, Any]]:
    """The commits to seed: after ``since``, else after ``last_commit`` while it is still in the history."""
    repo = str(repo)
    if not since and last_commit and git_history.git_is_ancestor(repo, last_commit):
        since = last_commit
    commits = git_history.git_log_read(repo, since=since, max_commits=max_commits, symbols=symbols)
    pulls: dict[str, dict[str, Any]] = {}
    if prs is not None:
        with open(prs, encoding="utf-8") as handle:
            pulls = git_history.pull_requests_read(handle)
    git_history.history_chains(commits, pulls)
    return commits


def seed_requests(
    commits: list[dict[str, Any]], base: dict[str, Any], post: Callable[[dict[str, Any]], Any]
) -> list[Any]:
    """Post ``commits`` in requests of ``COMMITS_MAX``, each ``base`` plus its commits; the answers in order."""
    return [
        post({**base, "commits": commits[start : start + COMMITS_MAX]}) for start in range(0, len(commits), COMMITS_MAX)
    ]
