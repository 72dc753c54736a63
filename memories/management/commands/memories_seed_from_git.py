from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from pydantic import ValidationError

from accounts.access import system_principal
from accounts.management.base import organization_by_slug
from memories.code.contracts_seed import (
    COMMITS_MAX,
    HistoryProgressInput,
    HistorySeedInput,
    HistorySeedOutput,
    history_progress_run,
    history_seed_run,
)
from memories.code.history import (
    GitError,
    git_is_ancestor,
    git_log_read,
    git_remote,
    history_chains,
    history_jsonl_read,
    pull_requests_read,
)
from memories.code.selectors_seed import history_seed_get
from reasoningbank.errors import NotFound, ServiceError

UNFINISHED = ("queued", "running")


def text_open(path: str) -> IO[str]:
    """A UTF-8 text file, gzip-compressed when its name ends in ``.gz`` (an exported history is large)."""
    if not Path(path).is_file():
        raise CommandError(f"no file {path!r}")
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else Path(path).open(encoding="utf-8")


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Seed a project's memory bank from a repository's git history: commit messages, changed paths and "
        "symbols, fix and revert chains (and pull requests from an exported file) handed in for distillation in "
        "batches. A re-run reads only the commits after the last one seeded. --dry-run prints the commits, "
        "batches and LLM budget first and submits nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="the organization's slug")
        parser.add_argument("--project", default=None, help="the project's slug (required when the org has several)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--repo", help="a git working tree or bare repository on this machine")
        source.add_argument("--log", help="an exported history instead: JSON Lines, one commit a line (.gz too)")
        parser.add_argument("--repository", default="", help="its remote (default: the repository's origin)")
        parser.add_argument("--since", default="", help="read the commits after this one (default: after the last "
                            "one seeded, or all of them)")  # fmt: skip
        parser.add_argument("--max-commits", type=int, default=0, help="at most the newest N commits")
        parser.add_argument("--prs", default="", help="pull requests exported as JSON Lines (number, title, body, "
                            "merge_commit)")  # fmt: skip
        parser.add_argument("--batch-size", type=int, default=20, help="commits per distillation batch (1-100)")
        parser.add_argument("--no-symbols", action="store_true", help="read changed paths only (faster on a huge "
                            "history)")  # fmt: skip
        parser.add_argument(
            "--dry-run", action="store_true", help="print what it would submit and cost; submit nothing"
        )
        parser.add_argument("--wait", type=float, default=0, help="then follow the distillation up to this many "
                            "seconds, printing the batches distilled")  # fmt: skip
        parser.add_argument("--status", action="store_true", help="print how far the seeding got; read nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        principal = system_principal(organization_by_slug(options["org"]))
        repository = options["repository"] or self._remote(options)
        if options["status"]:
            self._progress(principal, options["project"], repository)
            return
        try:
            seed = history_seed_get(principal, project=options["project"], repository=repository)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        commits = self._commits(options, seed.last_commit if seed is not None else "")
        if not commits:
            self.stdout.write("No new commit to seed.")
            return
        pulls = {}
        if options["prs"]:
            with text_open(options["prs"]) as handle:
                pulls = pull_requests_read(handle)
        history_chains(commits, pulls)
        outputs = self._submit(principal, options, repository, commits)
        self._report(outputs, dry_run=options["dry_run"])
        if options["wait"] and not options["dry_run"]:
            self._follow(principal, options["project"], repository, options["wait"])

    def _remote(self, options: dict[str, Any]) -> str:
        if options["repo"]:
            remote = git_remote(options["repo"])
            if not remote:
                raise CommandError("the repository has no remote: name it with --repository (e.g. github.com/acme/api)")
            return remote
        with text_open(options["log"]) as handle:
            first = handle.readline()
        try:
            named = json.loads(first).get("repo") if first.strip() else ""
        except ValueError:
            raise CommandError(f"{options['log']} is not JSON Lines: its first line is not a JSON object") from None
        if not named:
            raise CommandError("the exported history names no repository: give --repository")
        return str(named)

    def _commits(self, options: dict[str, Any], last: str) -> list[dict[str, Any]]:
        since = options["since"]
        if options["repo"]:
            if not since and last and git_is_ancestor(options["repo"], last):
                since = last
            # a last commit no longer in the history (a force-push): read it all again; the service skips
            # the commits it already has
            try:
                return git_log_read(
                    options["repo"], since=since, max_commits=options["max_commits"], symbols=not options["no_symbols"]
                )
            except GitError as exc:
                raise CommandError(f"git could not read {options['repo']}: {exc}") from None
        with text_open(options["log"]) as handle:
            commits = history_jsonl_read(handle)
        shas = [c["sha"] for c in commits]
        after = since or last
        if after and after in shas:
            commits = commits[shas.index(after) + 1 :]
        return commits[-options["max_commits"] :] if options["max_commits"] else commits

    def _submit(
        self, principal: Any, options: dict[str, Any], repository: str, commits: list[dict[str, Any]]
    ) -> list[HistorySeedOutput]:
        outputs = []
        for start in range(0, len(commits), COMMITS_MAX):
            try:
                args = HistorySeedInput.model_validate(
                    {
                        "repository": repository,
                        "project": options["project"],
                        "commits": commits[start : start + COMMITS_MAX],
                        "batch_size": options["batch_size"],
                        "dry_run": options["dry_run"],
                    }
                )
                output = history_seed_run(principal, args)
            except ValidationError as exc:
                raise CommandError(f"the history does not fit the seeding's contract: {exc}") from None
            except ServiceError as exc:
                raise CommandError(exc.message) from None
            outputs.append(output)
            if not options["dry_run"]:
                done = min(start + COMMITS_MAX, len(commits))
                self.stderr.write(f"  {done}/{len(commits)} commits read, {len(output.batches)} batch(es) submitted")
        return outputs

    def _report(self, outputs: list[HistorySeedOutput], *, dry_run: bool) -> None:
        received = sum(o.received for o in outputs)
        skipped = sum(o.skipped for o in outputs)
        batches = sum(o.estimate.batches for o in outputs)
        tokens_in = sum(o.estimate.input_tokens for o in outputs)
        tokens_out = sum(o.estimate.output_tokens for o in outputs)
        costs = [o.estimate.estimated_cost for o in outputs if o.estimate.estimated_cost is not None]
        last = outputs[-1]
        llm = f"{last.estimate.provider}" + (f" {last.estimate.model}" if last.estimate.model else "")
        cost = (
            f", ≈ {sum(float(c) for c in costs):.4f} {last.estimate.currency}"
            if costs and len(costs) == len(outputs) and batches
            else " (no price for this model in the LLM price table)"
            if llm != "none" and batches
            else ""
        )
        self.stdout.write(f"{'Dry run: ' if dry_run else ''}{received} commit(s) read, {skipped} already seeded")
        self.stdout.write(
            f"{batches} batch(es) to distil with {llm}: ≈ {tokens_in + tokens_out:,} tokens "
            f"({tokens_in:,} in, {tokens_out:,} out){cost}"
        )
        if dry_run:
            return
        episodic = sum(o.episodic_memories for o in outputs)
        gated = sum(o.gated for o in outputs)
        submitted = sum(len(o.batches) for o in outputs)
        self.stdout.write(f"{submitted} batch(es) submitted; the newest commit read is {last.last_commit[:12]}")
        if any(o.waiting_for_llm for o in outputs):
            held = sum(o.quarantined for o in outputs)
            self.stdout.write(
                f"No LLM is configured: the batches wait for one (docs/llm.md). Meanwhile {episodic} commit "
                f"message(s) became episodic memories ({held} held for review), {gated} kept out by the write gate."
            )

    def _progress(self, principal: Any, project: str | None, repository: str) -> Any:
        try:
            output = history_progress_run(principal, HistoryProgressInput(repository=repository, project=project))
        except NotFound as exc:
            raise CommandError(exc.message) from None
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        by_status = ", ".join(f"{n} {s}" for s, n in sorted(output.batches_by_status.items()))
        self.stdout.write(
            f"{output.repository} → {output.project}: {output.commits} commit(s), last {output.last_commit[:12]}; "
            f"{output.message} ({by_status}); {output.distilled_memories} distilled and "
            f"{output.episodic_memories} episodic memories"
        )
        return output

    def _follow(self, principal: Any, project: str | None, repository: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            output = self._progress(principal, project, repository)
            if not any(output.batches_by_status.get(s) for s in UNFINISHED) or time.monotonic() >= deadline:
                return
            time.sleep(min(5.0, max(0.5, deadline - time.monotonic())))
