from django.apps import AppConfig


class ReasoningBankConfig(AppConfig):
    """The project package doubles as an app for its shared commands (setup_schedules, ...)."""

    name = "reasoningbank"
    default_auto_field = "django.db.models.BigAutoField"
