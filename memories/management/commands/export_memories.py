from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.access import system_principal
from accounts.management.base import organization_by_slug
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import bank_export_record, counts_text
from reasoningbank.errors import ServiceError

PROGRESS_EVERY = 10_000  # lines


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Export an organization's memories (or one project's) as ReasoningBank JSON Lines: memories, links, "
        "signals, summaries, weights and the session ledger (format: docs/export-import.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("org_slug")
        parser.add_argument("--project", default=None, help="a project's slug: export only its memories")
        parser.add_argument("--output", "-o", default="-", help="the file to write (default: standard output)")
        parser.add_argument("--embeddings", action="store_true", help="also write each memory's embedding")

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org_slug"])
        principal = system_principal(org)
        try:
            scope = export_scope(principal, project=options["project"], embeddings=options["embeddings"])
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        bank_export_record(principal=principal, project=scope.project, embeddings=scope.embeddings)
        output = options["output"]
        counts: dict[str, int] = {}
        written = 0
        stream = sys.stdout if output == "-" else Path(output).open("w", encoding="utf-8", newline="\n")
        try:
            for line in export_lines(scope):
                stream.write(line)
                kind = line[9 : line.index('"', 9)] if line.startswith('{"type":"') else "?"
                counts[kind] = counts.get(kind, 0) + 1
                written += 1
                if written % PROGRESS_EVERY == 0:
                    self.stderr.write(f"  {written} lines")
        finally:
            if stream is not sys.stdout:
                stream.close()
            else:
                stream.flush()
        summary = counts_text(counts)
        where = "standard output" if output == "-" else output
        self.stderr.write(f"exported {summary} ({written} lines) to {where}")
