from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.base import organization_by_slug, run_service
from accounts.models import Project, Team
from accounts.tokens.services import token_create


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Create an API token for an organization. Prints the raw token last (it is shown only once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("org_slug")
        parser.add_argument("--label", required=True)
        parser.add_argument("--project", action="append", default=[], help="restrict to this project (repeatable)")
        parser.add_argument("--team", action="append", default=[], help="restrict to this team (repeatable)")
        parser.add_argument(
            "--scopes", default=None, help="comma-separated; default memories:read,memories:write,consolidation:run"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        org = organization_by_slug(options["org_slug"])
        projects = []
        for slug in options["project"]:
            project = Project.objects.filter(organization=org, slug=slug).first()
            if project is None:
                raise CommandError(f"project {slug!r} does not exist in {org.slug}")
            projects.append(project)
        teams = []
        for slug in options["team"]:
            team = Team.objects.filter(organization=org, slug=slug).first()
            if team is None:
                raise CommandError(f"team {slug!r} does not exist in {org.slug}")
            teams.append(team)
        scopes = options["scopes"].split(",") if options["scopes"] is not None else None
        token, raw = run_service(
            token_create, organization=org, label=options["label"], scopes=scopes, projects=projects, teams=teams
        )
        scopes_text = ", ".join(token.scopes)
        self.stdout.write(f"Created token {token.prefix}… ({scopes_text}). Store it now; it is not shown again:")
        self.stdout.write(raw)
