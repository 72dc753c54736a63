from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.base import organization_by_slug, run_service
from accounts.models import Team
from accounts.organizations.services import project_create, team_create


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Create a project in an organization (optionally in a team, created if missing). Prints the slug last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("org_slug")
        parser.add_argument("project_slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--team", default=None, help="team slug")

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org_slug"])
        team = None
        if options["team"]:
            team = Team.objects.filter(organization=org, slug=options["team"]).first() or run_service(
                team_create, organization=org, slug=options["team"], actor=None
            )
        project = run_service(
            project_create, organization=org, slug=options["project_slug"], name=options["name"], team=team, actor=None
        )
        self.stdout.write(f"Created project {project.slug} in {org.slug}" + (f" (team {team.slug})" if team else ""))
        self.stdout.write(project.slug)
