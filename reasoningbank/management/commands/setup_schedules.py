from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction
from django_q.models import Schedule

from reasoningbank.db_locks import lock_in_transaction
from reasoningbank.schedules import schedule_specs

# django-q2's schedule names are not unique: two machines starting at once would each find no
# "rb:queue-probe", each create one, and every tick would then run the job twice. One at a time.
SCHEDULES_LOCK = "setup-schedules"


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Create or update every periodic job (idempotent); removes ours that are no longer defined."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            lock_in_transaction(SCHEDULES_LOCK)
            self.schedules_place()

    def schedules_place(self) -> None:
        specs = schedule_specs()
        for spec in specs:
            # left by a race before the lock existed: update_or_create would fail on them at every start
            extra = Schedule.objects.filter(name=spec.name).order_by("pk").values_list("pk", flat=True)[1:]
            Schedule.objects.filter(pk__in=list(extra)).delete()
            Schedule.objects.update_or_create(
                name=spec.name,
                defaults={"func": spec.func, "schedule_type": Schedule.MINUTES, "minutes": spec.minutes, "repeats": -1},
            )
            self.stdout.write(f"schedule {spec.name}: every {spec.minutes} min — {spec.description}")
        stale = Schedule.objects.filter(name__startswith="rb:").exclude(name__in=[s.name for s in specs])
        removed, _ = stale.delete()
        self.stdout.write(f"{len(specs)} schedules in place, {removed} removed")
