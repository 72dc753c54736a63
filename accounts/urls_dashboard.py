"""Dashboard pages of this app (htmx + server-rendered templates)."""

from django.urls import path

from accounts import views, views_oauth, views_spend, views_write_limits

urlpatterns = [
    path("switch-org/", views.switch_org, name="switch-org"),
    path("settings/", views.settings_members, name="settings-members"),
    path("settings/members/invite/", views.member_invite, name="settings-member-invite"),
    path("settings/members/<int:membership_id>/role/", views.member_role, name="settings-member-role"),
    path("settings/members/<int:membership_id>/remove/", views.member_remove, name="settings-member-remove"),
    path("settings/teams/", views.settings_teams, name="settings-teams"),
    path("settings/teams/promotion/", views.settings_auto_promote, name="settings-auto-promote"),
    path("settings/projects/", views.settings_projects, name="settings-projects"),
    path("settings/tokens/", views.settings_tokens, name="settings-tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views.token_revoke_view, name="settings-token-revoke"),
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
    path("settings/usage/", views_spend.settings_spend, name="settings-usage"),
    path("settings/usage/budget/", views_spend.settings_budget, name="settings-budget"),
    path("settings/plan/", views.settings_plan, name="settings-plan"),
]
