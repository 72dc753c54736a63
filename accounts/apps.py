from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from allauth.account.signals import user_signed_up

        from accounts.receivers import provision_org_on_signup

        user_signed_up.connect(provision_org_on_signup, dispatch_uid="accounts.provision_org_on_signup")
