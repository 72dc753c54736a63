from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.access import system_principal
from accounts.management.base import organization_by_slug
from consolidation.promotion.reports import report_text
from consolidation.promotion.services import promotions_propose
from reasoningbank.errors import ServiceError


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Institutional promotion: propose the lessons that hold in several projects of a team for the "
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
