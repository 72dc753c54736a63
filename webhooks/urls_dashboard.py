"""Dashboard pages of webhooks (Settings → Webhooks)."""

from django.urls import path

from webhooks import views

urlpatterns = [
    path("settings/webhooks/", views.settings_webhooks, name="settings-webhooks"),
    path("settings/webhooks/<str:subscription_id>/", views.settings_webhook, name="settings-webhook"),
    path(
        "settings/webhooks/<str:subscription_id>/rotate/", views.webhook_rotate_secret, name="settings-webhook-rotate"
    ),
    path("settings/webhooks/<str:subscription_id>/toggle/", views.webhook_toggle, name="settings-webhook-toggle"),
    path("settings/webhooks/<str:subscription_id>/delete/", views.webhook_delete, name="settings-webhook-delete"),
    path(
        "settings/webhook-deliveries/<str:delivery_id>/redeliver/",
        views.webhook_redeliver,
        name="settings-webhook-redeliver",
    ),
]
