from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Organization
from memories.models import AgentSession
from memories.sessions.services import sessions_requeue


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Queue failed (or waiting) sessions for distillation again. Prints how many last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", default="failed", choices=["failed", "waiting_for_llm", "waiting_for_budget"])
        parser.add_argument("--org", default=None, help="only this organization (slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = AgentSession.objects.filter(status=options["status"])
        if options["org"]:
            if not Organization.objects.filter(slug=options["org"]).exists():
                raise CommandError(f"organization {options['org']!r} does not exist")
            sessions = sessions.filter(organization__slug=options["org"])
        count = sessions_requeue(sessions)
        self.stdout.write(f"re-queued {count} {options['status']} sessions")
        self.stdout.write(str(count))
