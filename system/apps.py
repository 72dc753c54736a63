from django.apps import AppConfig


class SystemConfig(AppConfig):
    name = "system"
    default_auto_field = "django.db.models.BigAutoField"
