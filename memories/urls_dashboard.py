"""Dashboard pages of this app (htmx + server-rendered templates)."""

from django.urls import path

from memories.code import views as code_views
from memories.dashboard import views
from memories.trust import provenance_views, views_injection, views_policy
from memories.trust import views_quarantine as quarantine

urlpatterns = [
    path("", views.overview_page, name="dashboard-overview"),
    path("memories/", views.memory_list_page, name="memory-list"),
    path("memories/<str:memory_id>/", views.memory_detail_page, name="memory-detail"),
    # the anchored paths as a tree and a file's memories (docs/code-memory.md#browse-by-code)
    path("code/", code_views.code_page, name="code-browse"),
    path("memories/<str:memory_id>/edit/", views.memory_edit_page, name="memory-edit"),
    path("memories/<str:memory_id>/archive/", views.memory_archive_action, name="memory-archive"),
    path("memories/<str:memory_id>/restore/", views.memory_restore_action, name="memory-restore"),
    path("memories/<str:memory_id>/unmerge/", views.memory_unmerge_action, name="memory-unmerge"),
    # what the instruction-smell detector held: decided from the review queue's page (admins)
    path("quarantine/<str:memory_id>/approve/", quarantine.quarantine_approve_action, name="quarantine-approve"),
    path("quarantine/<str:memory_id>/delete/", quarantine.quarantine_delete_action, name="quarantine-delete"),
    path(
        "quarantine/summaries/<str:summary_id>/approve/",
        quarantine.summary_held_approve_action,
        name="quarantine-summary-approve",
    ),
    path(
        "quarantine/summaries/<str:summary_id>/delete/",
        quarantine.summary_held_delete_action,
        name="quarantine-summary-delete",
    ),
    path(
        "memories/<str:memory_id>/clear-for-injection/",
        views_injection.memory_injection_clear_action,
        name="memory-injection-clear",
    ),
    path("settings/trust/", views_policy.settings_trust, name="settings-trust"),
    path("disputed/", views.disputed_page, name="disputed-list"),
    path("disputed/<int:link_id>/resolve/", views.disputed_resolve_action, name="disputed-resolve"),
    path("sessions/", views.session_list_page, name="session-list"),
    path("sessions/<str:session_id>/", views.session_detail_page, name="session-detail"),
    path("sessions/<str:session_id>/retry/", views.session_retry_action, name="session-retry"),
    # Settings → Connected apps (the accounts app's page): trusting an app clears its waiting memories
    path(
        "settings/connected-apps/trust/",
        provenance_views.oauth_client_trust_action,
        name="settings-oauth-client-trust",
    ),
]
