from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from allauth.account.signals import user_logged_in, user_signed_up

        from accounts.receivers import audit_llm_budget_alert, provision_org_on_signup, sso_sign_in_record
        from accounts.tokens.services_leaks import leaked_tokens_revoke
        from reasoningbank.ai.budget import llm_budget_alert
        from reasoningbank.leaks import leak_revoker_register

        user_signed_up.connect(provision_org_on_signup, dispatch_uid="accounts.provision_org_on_signup")
        user_logged_in.connect(sso_sign_in_record, dispatch_uid="accounts.sso_sign_in_record")
        llm_budget_alert.connect(audit_llm_budget_alert, dispatch_uid="accounts.audit_llm_budget_alert")
        # our tokens found in a text are revoked by whoever scrubbed it (reasoningbank/leaks.py)
        leak_revoker_register("accounts", leaked_tokens_revoke)
