from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.plans import usage_counter_register
        from memories.selectors import memories_active_count

        usage_counter_register("memories", memories_active_count)
