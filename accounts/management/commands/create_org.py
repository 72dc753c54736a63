from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.commands._base import run_service
from accounts.plans import PLAN_ORDER
from accounts.services import organization_create, user_create


class Command(BaseCommand):
    help = "Create an organization. Prints the org slug last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--plan", default=None, choices=PLAN_ORDER, help="left out: the DEFAULT_PLAN setting (docs/tenancy.md)"
        )
        parser.add_argument("--owner-email", default=None, help="created if it does not exist; becomes owner")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = run_service(user_create, email=options["owner_email"]) if options["owner_email"] else None
        org = run_service(
            organization_create, slug=options["slug"], name=options["name"], plan=options["plan"], owner=owner
        )
        self.stdout.write(f"Created organization {org.slug} ({org.plan})")
        self.stdout.write(org.slug)
