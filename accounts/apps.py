from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from allauth.account.signals import user_logged_in as allauth_user_logged_in
        from allauth.account.signals import user_signed_up
        from allauth.mfa import signals as mfa_signals
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed

        from accounts.mfa import receivers as mfa_receivers
        from accounts.receivers import (
            audit_llm_budget_alert,
            audit_user_logged_in,
            audit_user_logged_out,
            audit_user_login_failed,
            provision_org_on_signup,
            sso_sign_in_record,
        )
        from accounts.tokens.services_leaks import leaked_tokens_revoke
        from reasoningbank.ai.budget import llm_budget_alert
        from reasoningbank.leaks import leak_revoker_register

        user_signed_up.connect(provision_org_on_signup, dispatch_uid="accounts.provision_org_on_signup")
        allauth_user_logged_in.connect(sso_sign_in_record, dispatch_uid="accounts.sso_sign_in_record")
        llm_budget_alert.connect(audit_llm_budget_alert, dispatch_uid="accounts.audit_llm_budget_alert")
        # sign-ins, failures and sign-outs in the audit log (docs/identity.md#the-audit-log)
        user_logged_in.connect(audit_user_logged_in, dispatch_uid="accounts.audit_user_logged_in")
        user_login_failed.connect(audit_user_login_failed, dispatch_uid="accounts.audit_user_login_failed")
        user_logged_out.connect(audit_user_logged_out, dispatch_uid="accounts.audit_user_logged_out")
        # our tokens found in a text are revoked by whoever scrubbed it (reasoningbank/leaks.py)
        leak_revoker_register("accounts", leaked_tokens_revoke)
        # every enrolment, removal and new set of recovery codes is an audit row (accounts/mfa/services.py)
        mfa_signals.authenticator_added.connect(
            mfa_receivers.mfa_authenticator_added, dispatch_uid="accounts.mfa_added"
        )
        mfa_signals.authenticator_removed.connect(
            mfa_receivers.mfa_authenticator_removed, dispatch_uid="accounts.mfa_removed"
        )
        mfa_signals.authenticator_reset.connect(
            mfa_receivers.mfa_authenticator_reset, dispatch_uid="accounts.mfa_reset"
        )
