from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memories.context.services import summaries_reembed
from memories.core.services import memories_reembed


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = "Re-embed memories with the configured embedder (after changing EMBEDDER or EMBEDDING_MODEL)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="also memories already embedded by this model")
        parser.add_argument("--batch", type=int, default=256)

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(done: int, total: int) -> None:
            self.stdout.write(f"  {done}/{total}")

        done = memories_reembed(only_stale=not options["all"], batch=options["batch"], progress=progress)
        self.stdout.write(f"re-embedded {done} memories")
        summaries = summaries_reembed(only_stale=not options["all"], batch=options["batch"])
        if summaries:
            self.stdout.write(f"re-embedded {summaries} summaries")
        self.stdout.write(str(done))
