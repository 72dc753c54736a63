from typing import Any

from django.core.management.base import BaseCommand

from memories.tasks import signals_rollup_daily


class Command(BaseCommand):
    help = "Fold signal events older than 30 days into aggregates and recompute confidences (seed 000 rollup)."

    def handle(self, *args: Any, **options: Any) -> None:
        result = signals_rollup_daily()
        self.stdout.write(
            f"folded {result['folded']} events of {result['memories']} memories; recomputed {result['recomputed']}"
        )
