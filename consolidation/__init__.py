#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to consolidation.
PUBLIC_MODULES: tuple[str, ...] = (
    "consolidation.models",
    "consolidation.events",  # the signals webhooks publish (run_completed, …)
    # what the operator's system page shows of a run: the phases in order, and a run's timeline
    "consolidation.phases.registry",
    "consolidation.timeline",
)
