from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.base import organization_by_slug
from memories.context.services_repair import SummariesRepairReport, summaries_repair


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Find the consolidated summaries that break the contract every summary keeps (rows an older import let "
        "in) and report them; with --apply repair each, or remove it when it cannot be repaired (audited). "
        "A dry run by default. Prints the number found last."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", default=None, help="only this organization (slug); else every organization")
        parser.add_argument("--apply", action="store_true", help="repair or remove what it finds (else only report)")

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org"]) if options["org"] else None
        report = summaries_repair(organization=org, apply=options["apply"])
        self.stdout.write(report_text(report))
        self.stdout.write(str(len(report.findings)))


def report_text(report: SummariesRepairReport) -> str:
    """One line per summary found (org, summary, memory, what it does, why), then the totals."""
    repaired, removed = ("repaired", "removed") if report.applied else ("would repair", "would remove")
    lines = [
        f"{f.organization} {f.summary_id} (memory {f.memory_id}): "
        f"{repaired if f.action == 'repair' else removed} — {'; '.join(f.problems)}"
        for f in report.findings
    ]
    totals = (
        f"{report.checked} summaries checked, {len(report.findings)} break the contract: "
        f"{report.count('repair')} {repaired}, {report.count('remove')} {removed}"
    )
    hint = "" if report.applied or not report.findings else " (a dry run: --apply to write)"
    return "\n".join([*lines, totals + hint])
