from typing import Any

from django.core.management.base import BaseCommand
from django_q.models import Schedule

from reasoningbank.schedules import schedule_specs


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Create or update every periodic job (idempotent); removes ours that are no longer defined."

    def handle(self, *args: Any, **options: Any) -> None:
        specs = schedule_specs()
        for spec in specs:
            Schedule.objects.update_or_create(
                name=spec.name,
                defaults={"func": spec.func, "schedule_type": Schedule.MINUTES, "minutes": spec.minutes, "repeats": -1},
            )
            self.stdout.write(f"schedule {spec.name}: every {spec.minutes} min — {spec.description}")
        stale = Schedule.objects.filter(name__startswith="rb:").exclude(name__in=[s.name for s in specs])
        removed, _ = stale.delete()
        self.stdout.write(f"{len(specs)} schedules in place, {removed} removed")
