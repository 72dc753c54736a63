"""REST routes of webhooks, included by ``reasoningbank.urls`` under ``api/v1/``."""

from django.urls import path

from webhooks import api

urlpatterns = [
    path("webhooks", api.SubscriptionListView.as_view(), name="api-webhooks"),
    # before the subscription routes, so "deliveries" is never read as a subscription id
    path("webhooks/deliveries/<str:delivery_id>", api.DeliveryDetailView.as_view(), name="api-webhook-delivery"),
    path(
        "webhooks/deliveries/<str:delivery_id>/redeliver",
        api.DeliveryRedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
    path("webhooks/<str:subscription_id>", api.SubscriptionDetailView.as_view(), name="api-webhook"),
    path(
        "webhooks/<str:subscription_id>/rotate-secret",
        api.SubscriptionRotateSecretView.as_view(),
        name="api-webhook-rotate-secret",
    ),
    path(
        "webhooks/<str:subscription_id>/deliveries",
        api.DeliveryListView.as_view(),
        name="api-webhook-deliveries",
    ),
]
