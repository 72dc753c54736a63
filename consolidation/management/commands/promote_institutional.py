from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.access import system_principal
from accounts.management.commands._base import organization_by_slug
from consolidation.promotion.services import SKIP_REASONS, PromotionReport, promotions_propose
from reasoningbank.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Institutional promotion (seed 001): propose the lessons that hold in several projects of a team for the "
        "team, and across teams for the organization; proposals wait in the review queue unless the organization "
        "accepts them automatically. Needs the Teams plan."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="the organization's slug")
        parser.add_argument("--dry-run", action="store_true", help="only list what would be proposed")

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org"])
        try:
            report = promotions_propose(principal=system_principal(org), dry_run=options["dry_run"], trigger="command")
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(report_text(report))


def report_text(report: PromotionReport) -> str:
    lines = []
    for p in report.proposed:
        where = f"team {p.team}" if p.team else "the organization"
        status = {"would_propose": "would propose", "pending": "proposed", "accepted": "promoted"}[p.status]
        ref = f" (review {p.review_id}, memory {p.memory_id})" if p.review_id else ""
        lines.append(
            f"{status} for {where}: {p.title!r}{ref} — holds in {', '.join(p.places)}; "
            f"confidence {p.confidence:.3f} (weighted {p.weighted:.3f} + consensus {p.bonus:.3f}); "
            f"{len(p.sources)} sources: {', '.join(s['id'] for s in p.sources)}"
        )
    for reason, count in sorted(report.skipped.items()):
        lines.append(f"skipped {count}: {SKIP_REASONS.get(reason, reason)}")
    verb = "would propose" if report.dry_run else "proposed"
    lines.append(
        f"{report.candidates} trusted procedural memories looked at; {verb} {len(report.proposed)}"
        + ("" if report.dry_run else f", {report.accepted} accepted automatically")
    )
    return "\n".join(lines)
