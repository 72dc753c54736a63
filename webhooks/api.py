"""REST views of webhooks (docs/webhooks.md): subscriptions and their delivery log, organization
admins only.

Thin: parse, call a selector or service, serialize. Texts in ``extend_schema`` are the public API
documentation (no class docstrings on the views: drf-spectacular would publish them).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import (
    EmptyBodySerializer,
    EmptyQuerySerializer,
    StrictBooleanField,
    StrictCharField,
    StrictQuerySerializer,
    StrictSerializer,
)
from webhooks.event_types import EVENT_TYPES
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.policy import HEALTHS, URL_MAX_LENGTH
from webhooks.selectors import delivery_get, delivery_list, subscription_get, subscription_list
from webhooks.services import (
    DESCRIPTION_MAX,
    delivery_redeliver,
    subscription_create,
    subscription_delete,
    subscription_secret_rotate,
    subscription_update,
    webhooks_admin_require,
)

TAGS = ["webhooks"]
# named enums in the schema (ENUM_NAME_OVERRIDES): "status" and "events" are common field names
DELIVERY_STATUSES = [status for status, _ in WebhookDelivery.STATUS_CHOICES]
EVENT_NAMES = list(EVENT_TYPES)
EVENTS_HELP = "event names: " + "; ".join(f"`{name}`: {text}" for name, text in EVENT_TYPES.items())
SUBSCRIPTION_ID = OpenApiParameter(
    "subscription_id", str, OpenApiParameter.PATH, description="the subscription's id (`whk_…`)"
)
DELIVERY_ID = OpenApiParameter("delivery_id", str, OpenApiParameter.PATH, description="the delivery's id (`whd_…`)")
ADMIN_ONLY = " Needs the `admin` scope and a token for the whole organization (not restricted to some projects)."


def _events_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_NAMES), allow_empty=False, help_text=EVENTS_HELP, **kwargs
    )


class SubscriptionCreateSerializer(StrictSerializer):
    url = StrictCharField(max_length=URL_MAX_LENGTH, help_text="an https URL whose host resolves to public addresses")
    events = _events_field()
    description = StrictCharField(required=False, allow_blank=True, max_length=DESCRIPTION_MAX, default="")


class SubscriptionUpdateSerializer(StrictSerializer):
    url = StrictCharField(required=False, max_length=URL_MAX_LENGTH)
    events = _events_field(required=False)
    description = StrictCharField(required=False, allow_blank=True, max_length=DESCRIPTION_MAX)
    enabled = StrictBooleanField(
        required=False,
        help_text="false switches deliveries off; true switches them on again and clears the failure marks",
    )


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.CharField()
    url = serializers.CharField()
    description = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField(
        help_text="whether it gets events (switched on); how its deliveries fare is `health`"
    )
    disabled_reason = serializers.CharField(
        help_text="empty while enabled; `manual`: an admin switched it off; `failing`: its deliveries failed for "
        "`WEBHOOK_DISABLE_AFTER` without a success"
    )
    health = serializers.ChoiceField(
        choices=list(HEALTHS),
        help_text="`failing` from its first failed attempt since the last success (retries pending or not), "
        "`healthy` after a success, `untried` before any attempt ended; a success, or switching it on again, "
        "clears the failure fields",
    )
    failing_since = serializers.DateTimeField(
        allow_null=True, help_text="the first failed attempt since the last success; null while not failing"
    )
    failed_attempts = serializers.IntegerField(help_text="attempts failed since the last success, of any delivery")
    consecutive_failures = serializers.IntegerField(
        help_text="deliveries that failed every attempt since the last success"
    )
    last_error = serializers.CharField(help_text="why the last failed attempt failed; empty while not failing")
    last_failure_at = serializers.DateTimeField(allow_null=True, help_text="when the last failed attempt ended")
    last_success_at = serializers.DateTimeField(allow_null=True)
    secret_hint = serializers.CharField(help_text="the secret's first characters, to tell secrets apart")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SubscriptionWithSecretSerializer(SubscriptionSerializer):
    secret = serializers.CharField(
        help_text="the signing secret (HMAC-SHA256 key): shown only in this answer; store it with the receiver"
    )


class DeliveryQuerySerializer(StrictQuerySerializer):
    status = serializers.ChoiceField(choices=DELIVERY_STATUSES, required=False)


class DeliverySerializer(serializers.Serializer):
    id = serializers.CharField()
    subscription = serializers.CharField(source="subscription_id")
    event_id = serializers.CharField(help_text="the event's id (`evt_…`): the same for a redelivery, for idempotency")
    event_type = serializers.CharField()
    status = serializers.ChoiceField(choices=DELIVERY_STATUSES)
    attempts = serializers.IntegerField()
    response_code = serializers.IntegerField(allow_null=True, help_text="the last attempt's HTTP status")
    latency_ms = serializers.IntegerField(allow_null=True, help_text="the last attempt's time to the answer")
    error = serializers.CharField(help_text="why the last attempt failed; empty after a success")
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    redelivery_of = serializers.CharField(source="redelivery_of_id", allow_null=True)


class DeliveryDetailSerializer(DeliverySerializer):
    payload = serializers.JSONField(help_text="the body sent, parsed (scrubbed of secrets)")
    body = serializers.CharField(
        help_text="the body exactly as posted, the bytes the signature covers (UTF-8 JSON text): "
        "HMAC-SHA256 of `<t>.<body>` with the secret gives the `v1` of its `ReasoningBank-Signature`"
    )


class WebhookAPIView(OrgAPIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        webhooks_admin_require(self.principal)  # an admin token restricted to some projects: 403 before any read

    def subscription(self, subscription_id: str) -> WebhookSubscription:
        return subscription_get(self.principal, subscription_id)


class SubscriptionListView(WebhookAPIView):
    required_scopes = {"GET": SCOPE_ADMIN, "POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_list",
        summary="List webhook subscriptions",
        description="The organization's webhook subscriptions, newest first, one page at a time." + ADMIN_ONLY,
        responses={200: SubscriptionSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        EmptyQuerySerializer(data=request.query_params).is_valid(raise_exception=True)
        page = self.paginate_queryset(subscription_list(self.principal))
        return self.get_paginated_response(SubscriptionSerializer(page, many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_create",
        summary="Subscribe a URL to events",
        description=(
            "Subscribe an https URL to events of the organization's bank. Every delivery is a JSON POST signed "
            "with the subscription's secret (`ReasoningBank-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "
            "'<t>.<body>'>`); the secret is in this answer only. The URL's host must resolve to public addresses "
            "(checked now and at every delivery). At most 20 subscriptions per organization." + ADMIN_ONLY
        ),
        request=SubscriptionCreateSerializer,
        responses={
            201: SubscriptionWithSecretSerializer,
            **error_responses(400, 401, 403, 415, conflict="the organization has 20 subscriptions already"),
        },
    )
    def post(self, request: Request) -> Response:
        data = SubscriptionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        subscription = subscription_create(principal=self.principal, **data.validated_data)
        return Response(SubscriptionWithSecretSerializer(subscription).data, status=status.HTTP_201_CREATED)


class SubscriptionDetailView(WebhookAPIView):
    required_scopes = {"GET": SCOPE_ADMIN, "PATCH": SCOPE_ADMIN, "DELETE": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_get",
        summary="A webhook subscription",
        description="One subscription (never its secret)." + ADMIN_ONLY,
        parameters=[SUBSCRIPTION_ID],
        responses={200: SubscriptionSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, subscription_id: str) -> Response:
        return Response(SubscriptionSerializer(self.subscription(subscription_id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_update",
        summary="Change a webhook subscription",
        description="Change its URL, events or description, or switch it off and on (`enabled`)." + ADMIN_ONLY,
        parameters=[SUBSCRIPTION_ID],
        request=SubscriptionUpdateSerializer,
        responses={200: SubscriptionSerializer, **error_responses(400, 401, 403, 404, 415)},
    )
    def patch(self, request: Request, subscription_id: str) -> Response:
        subscription = self.subscription(subscription_id)
        data = SubscriptionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        subscription = subscription_update(principal=self.principal, subscription=subscription, **data.validated_data)
        return Response(SubscriptionSerializer(subscription).data)

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_delete",
        summary="Delete a webhook subscription",
        description="The subscription and its delivery log; deliveries waiting for a retry are not sent." + ADMIN_ONLY,
        parameters=[SUBSCRIPTION_ID],
        responses={204: None, **error_responses(401, 403, 404)},
    )
    def delete(self, request: Request, subscription_id: str) -> Response:
        subscription_delete(principal=self.principal, subscription=self.subscription(subscription_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SubscriptionRotateSecretView(WebhookAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_rotate_secret",
        summary="Rotate a webhook's secret",
        description=(
            "A new signing secret, in this answer only; every delivery from now on (retries included) is "
            "signed with it, so give it to the receiver first." + ADMIN_ONLY
        ),
        parameters=[SUBSCRIPTION_ID],
        request=None,
        responses={200: SubscriptionWithSecretSerializer, **error_responses(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, subscription_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        subscription = subscription_secret_rotate(
            principal=self.principal, subscription=self.subscription(subscription_id)
        )
        return Response(SubscriptionWithSecretSerializer(subscription).data)


class DeliveryListView(WebhookAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_deliveries_list",
        summary="A subscription's delivery log",
        description=(
            "Every delivery of this subscription, newest first: its status (`pending`, `succeeded`, `failed`), "
            "attempts, and the last attempt's HTTP status, time and error." + ADMIN_ONLY
        ),
        parameters=[SUBSCRIPTION_ID, DeliveryQuerySerializer],
        responses={200: DeliverySerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request, subscription_id: str) -> Response:
        subscription = self.subscription(subscription_id)
        query = DeliveryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        deliveries = delivery_list(self.principal, subscription=subscription, status=query.validated_data.get("status"))
        page = self.paginate_queryset(deliveries)
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)


class DeliveryDetailView(WebhookAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_delivery_get",
        summary="A webhook delivery",
        description="One delivery with the payload it sent: parsed (`payload`) and as the exact bytes posted and "
        "signed (`body`)." + ADMIN_ONLY,
        parameters=[DELIVERY_ID],
        responses={200: DeliveryDetailSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, delivery_id: str) -> Response:
        return Response(DeliveryDetailSerializer(delivery_get(self.principal, delivery_id)).data)


class DeliveryRedeliverView(WebhookAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_delivery_redeliver",
        summary="Send a delivery again",
        description=(
            "The same event (same `event_id` and payload, signed anew) as a new delivery with fresh attempts."
            + ADMIN_ONLY
        ),
        parameters=[DELIVERY_ID],
        request=None,
        responses={
            202: DeliverySerializer,
            **error_responses(400, 401, 403, 404, 409, 415, conflict="the subscription is disabled"),
        },
    )
    def post(self, request: Request, delivery_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        again = delivery_redeliver(principal=self.principal, delivery=delivery_get(self.principal, delivery_id))
        return Response(DeliverySerializer(again).data, status=status.HTTP_202_ACCEPTED)
