from typing import Any

from django.core.management.base import BaseCommand

from memories.tasks import signals_rollup_daily


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Fold signal events older than 30 days into aggregates, demote the memories shown often and never used, "
        "recompute confidences (silent memories decay toward their prior) and archive the memories whose "
        "confidence stayed below the prune threshold."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = signals_rollup_daily()
        self.stdout.write(
            f"folded {result['folded']} events of {result['memories']} memories; decayed {result['decayed']}; "
            f"demoted {result['demoted']}; "
            f"recomputed {result['recomputed']}; pruned {result['pruned']}"
        )
