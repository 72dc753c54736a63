"""Dashboard pages of this app (htmx + server-rendered templates); each feature's pages are in
``accounts/<feature>/views.py``."""

from django.urls import path

from accounts.audit_log import views as views_audit
from accounts.budgets import views as views_spend
from accounts.departures import views as views_departures
from accounts.mfa import views as views_mfa
from accounts.oauth import views as views_oauth
from accounts.organizations import views
from accounts.plans import views as views_plans
from accounts.scim import views_settings as views_scim
from accounts.sso import views as views_sso
from accounts.tokens import views as views_tokens
from accounts.write_limits import views as views_write_limits

urlpatterns = [
    path("switch-org/", views.switch_org, name="switch-org"),
    path("settings/", views.settings_members, name="settings-members"),
    path("settings/members/invite/", views.member_invite, name="settings-member-invite"),
    path("settings/members/<int:membership_id>/role/", views.member_role, name="settings-member-role"),
    path("settings/members/<int:membership_id>/remove/", views.member_remove, name="settings-member-remove"),
    path(
        "settings/members/<int:membership_id>/deactivate/",
        views_departures.member_deactivate_view,
        name="settings-member-deactivate",
    ),
    path(
        "settings/members/<int:membership_id>/reactivate/",
        views_departures.member_reactivate_view,
        name="settings-member-reactivate",
    ),
    path("settings/teams/", views.settings_teams, name="settings-teams"),
    path("settings/teams/promotion/", views.settings_auto_promote, name="settings-auto-promote"),
    path("settings/projects/", views.settings_projects, name="settings-projects"),
    path(
        "settings/projects/<int:project_id>/repository/", views.project_repository, name="settings-project-repository"
    ),
    path("settings/tokens/", views_tokens.settings_tokens, name="settings-tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views_tokens.token_revoke_view, name="settings-token-revoke"),
    path(
        "settings/tokens/<int:token_id>/unsuspend/",
        views_write_limits.token_unsuspend_view,
        name="settings-token-unsuspend",
    ),
    path("settings/connected-apps/", views_oauth.settings_connected_apps, name="settings-connected-apps"),
    path(
        "settings/connected-apps/<int:connection_id>/revoke/",
        views_oauth.connected_app_revoke,
        name="settings-connected-app-revoke",
    ),
    path(
        "settings/connected-apps/<int:connection_id>/unsuspend/",
        views_write_limits.connected_app_unsuspend_view,
        name="settings-connected-app-unsuspend",
    ),
    path("settings/provisioning/", views_scim.settings_scim, name="settings-scim"),
    path(
        "settings/provisioning/tokens/<int:token_id>/revoke/",
        views_scim.scim_token_revoke_view,
        name="settings-scim-token-revoke",
    ),
    path("settings/usage/", views_spend.settings_spend, name="settings-usage"),
    path("settings/usage/budget/", views_spend.settings_budget, name="settings-budget"),
    path("settings/plan/", views_plans.settings_plan, name="settings-plan"),
    path("settings/audit/", views_audit.settings_audit, name="settings-audit"),
    path("settings/audit/export/", views_audit.settings_audit_export, name="settings-audit-export"),
    path("settings/mfa/", views_mfa.settings_mfa, name="settings-mfa"),
    path("settings/mfa/policy/", views_mfa.settings_mfa_policy, name="settings-mfa-policy"),
    path("settings/sso/", views_sso.settings_sso, name="settings-sso"),
    path("settings/sso/oidc/", views_sso.sso_oidc_save, name="settings-sso-oidc"),
    path("settings/sso/saml/", views_sso.sso_saml_save, name="settings-sso-saml"),
    path("settings/sso/roles/", views_sso.sso_roles_save, name="settings-sso-roles"),
    path("settings/sso/policy/", views_sso.sso_policy_save, name="settings-sso-policy"),
    path("settings/sso/domains/", views_sso.sso_domain_create, name="settings-sso-domain-add"),
    path("settings/sso/domains/<int:domain_id>/verify/", views_sso.sso_domain_check, name="settings-sso-domain-verify"),
    path(
        "settings/sso/domains/<int:domain_id>/remove/", views_sso.sso_domain_delete, name="settings-sso-domain-remove"
    ),
    # "Sign in with single sign-on" (no sign-in needed): an address's domain names the organization
    path("sso/", views_sso.sso_start, name="sso-start"),
]
