from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.base import organization_by_slug, run_service
from accounts.plans.catalogue import PLAN_ORDER
from accounts.plans.services import organization_set_plan


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Change an organization's plan (audited, as the dashboard's plan page does). New organizations start "
        "on the DEFAULT_PLAN setting. Prints the plan last."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("org_slug")
        parser.add_argument("plan", choices=PLAN_ORDER)

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org_slug"])
        previous = org.plan
        org = run_service(organization_set_plan, organization=org, plan=options["plan"], actor=None)
        self.stdout.write(f"Changed the plan of {org.slug} from {previous} to {org.plan}")
        self.stdout.write(org.plan)
