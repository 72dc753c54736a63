from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.access import system_principal
from accounts.management.base import organization_by_slug
from memories.transfer.services import FORMATS, ImportInvalid, bank_import, counts_text
from reasoningbank.errors import ServiceError


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Import memories into an organization (or one project) from a ReasoningBank export, a CLAUDE.md / "
        "memory markdown file or a mem0 export. Every line is checked first; a bad file imports nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("org_slug")
        parser.add_argument("file", help="the file to import ('-' reads standard input)")
        parser.add_argument("--project", default=None, help="a project's slug: every memory goes into it")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="reasoningbank")
        parser.add_argument("--dry-run", action="store_true", help="check the file and report, write nothing")
        parser.add_argument("--name", default=None, help="claude-md: the file's name in the descriptions")
        parser.add_argument(
            "--reviewed",
            action="store_true",
            help="you read the file and vouch for it: its memories are trusted for automatic injection at once "
            "(audited); without it they wait for a person's review before they are injected",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org_slug"])
        path = options["file"]
        if path == "-":
            source: Any = sys.stdin.read()
        else:
            file = Path(path)
            if not file.is_file():
                raise CommandError(f"no file {path!r}")

            def source() -> Iterator[str]:  # read afresh for each pass (checked, then written)
                with file.open(encoding="utf-8", newline="") as handle:
                    yield from handle

        def progress(stage: str, done: int, total: int | None) -> None:
            self.stderr.write(f"  {stage} {done}" + (f"/{total}" if total is not None else ""))

        try:
            result = bank_import(
                principal=system_principal(org),
                source=source,
                fmt=options["fmt"],
                project=options["project"],
                dry_run=options["dry_run"],
                progress=progress,
                source_name=options["name"] or (Path(path).name if path != "-" else "CLAUDE.md"),
                file_name=Path(path).name if path != "-" else "",
                reviewed=options["reviewed"],
            )
        except ImportInvalid as exc:
            for error in exc.errors:
                self.stderr.write(f"  {error}")
            more = " (and more)" if exc.truncated else ""
            raise CommandError(f"the file has {len(exc.errors)} problem(s){more}; nothing was imported") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for skipped in result.skipped:
            self.stderr.write(f"  skipped {skipped['where']}: {skipped['message']}")
        for warning in result.warnings:
            self.stderr.write(f"  warning: {warning}")
        made = counts_text(result.created)
        created = [f"project {slug}" for slug in result.projects_created] + [f"team {t}" for t in result.teams_created]
        extra = f"; created {', '.join(created)}" if created else ""
        verb = "would import" if result.dry_run else "imported"
        into = f"{org.slug}/{result.project}" if result.project else org.slug
        if result.created.get("memory"):
            waits = "trusted for injection (--reviewed)" if result.trust == "trusted" else (
                "pending: searchable, injected once a person reviews them (or import with --reviewed)"
            )
            self.stderr.write(f"  the imported memories are {waits}")
        held = (
            f"; {result.quarantined} memories and {result.held_summaries} summaries held in quarantine"
            if (result.quarantined or result.held_summaries)
            else ""
        )
        self.stdout.write(f"{verb} {made} into {into}{extra}{held}")
