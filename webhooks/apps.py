from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from reasoningbank.leaks import leak_revoker_register
        from webhooks import receivers
        from webhooks.services_leaks import leaked_webhook_secrets_revoke

        receivers.receivers_connect()
        # a signing secret found in a text is rotated by whoever scrubbed it (reasoningbank/leaks.py)
        leak_revoker_register("webhooks", leaked_webhook_secrets_revoke)
