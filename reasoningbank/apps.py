import sys
from datetime import datetime

from django.apps import AppConfig

from reasoningbank.processes import process_role_from_argv


class ReasoningBankConfig(AppConfig):
    """The project package doubles as an app for its shared commands (setup_schedules, ...)."""

    name = "reasoningbank"
    default_auto_field = "django.db.models.BigAutoField"
    booted_at: datetime

    def ready(self) -> None:
        from django.conf import settings
        from django.db.backends.signals import connection_created
        from django.utils import timezone

        from reasoningbank.db_replica import write_tracking_install

        # with a read replica, writes on the primary keep their request's reads there (read-your-writes)
        connection_created.connect(write_tracking_install, dispatch_uid="reasoningbank.replica_write_tracking")
        # the grace period of the queue probe and of the worker presences starts here
        # (see reasoningbank.health.worker_health)
        self.booted_at = timezone.now()
        if process_role_from_argv(sys.argv) == "worker":
            from reasoningbank.worker_presence import worker_presence_install

            worker_presence_install()  # each worker stamps its own row, from its sentinel (inherited by the fork)
        # every process that loads Django (uvicorn's web workers, qcluster before it forks, commands)
        if settings.TRACING_ENABLED:
            from reasoningbank.tracing import setup

            setup(exporters=settings.OTEL_TRACES_EXPORTER, role=settings.TRACING_PROCESS_ROLE)
