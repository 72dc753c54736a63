"""Webhook subscriptions and their deliveries; both belong to one organization (docs/webhooks.md)."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models

from reasoningbank.ids import new_id
from reasoningbank.sharding import SameOrganization
from webhooks.policy import subscription_health
from webhooks.signing import payload_body


def new_subscription_id() -> str:
    return new_id("whk")


def new_delivery_id() -> str:
    return new_id("whd")


def new_event_id() -> str:
    return new_id("evt")


class WebhookSubscription(models.Model):
    DISABLED_MANUAL, DISABLED_FAILING = "manual", "failing"
    DISABLED_CHOICES = [("", "Enabled"), (DISABLED_MANUAL, "Disabled by an admin"), (DISABLED_FAILING, "Failing")]

    id = models.CharField(primary_key=True, max_length=40, default=new_subscription_id, editable=False)
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    events = models.JSONField(default=list)  # event type names (webhooks.event_types)
    # kept in clear: signing needs it (an HMAC key cannot be a digest); shown once, then only its prefix
    secret = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=10, choices=DISABLED_CHOICES, blank=True, default="")
    # Its health, apart from whether it is switched on (``enabled``): marked from the first failed
    # attempt, so a receiver that refuses everything shows at once and not hours later when a delivery
    # has used up its retries; all cleared by a success, or by switching it on again (docs/webhooks.md#health)
    failing_since = models.DateTimeField(null=True, blank=True)  # the first failed attempt since the last success
    failed_attempts = models.PositiveIntegerField(default=0)  # attempts failed since then, of any delivery
    consecutive_failures = models.PositiveIntegerField(default=0)  # deliveries that failed every attempt
    last_error = models.CharField(max_length=500, blank=True, default="")  # the last failed attempt's
    last_failure_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "enabled"], name="webhooksub_org_enabled")]
        constraints = [models.UniqueConstraint(fields=["id", "organization"], name="webhooksub_id_org_unique")]

    def __str__(self) -> str:
        return f"{self.id} {self.url}"

    @property
    def secret_hint(self) -> str:
        return self.secret[:10] + "…"

    @property
    def health(self) -> str:
        return subscription_health(self.failing_since, self.last_success_at)


class WebhookDelivery(models.Model):
    STATUS_PENDING, STATUS_SUCCEEDED, STATUS_FAILED = "pending", "succeeded", "failed"
    STATUS_CHOICES = [(STATUS_PENDING, "Pending"), (STATUS_SUCCEEDED, "Delivered"), (STATUS_FAILED, "Failed")]

    id = models.CharField(primary_key=True, max_length=40, default=new_delivery_id, editable=False)
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    # both references are checked with the organization (SameOrganization, reasoningbank/sharding.py)
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries", db_constraint=False
    )
    event_id = models.CharField(max_length=40, default=new_event_id)  # the same for a redelivery
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()  # the body sent, scrubbed of secrets
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # a retry's time; None: due now
    # in flight until then: set when a worker takes it for an attempt, cleared when the attempt ends; a
    # worker that died leaves it to expire. The organization's in-flight cap counts these
    # (WEBHOOK_ORG_CONCURRENCY, docs/security/worker-fairness.md)
    leased_until = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)  # the last attempt's
    latency_ms = models.PositiveIntegerField(null=True, blank=True)  # the last attempt's
    error = models.CharField(max_length=500, blank=True, default="")  # the last attempt's
    redelivery_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="webhookdel_org_created"),
            models.Index(fields=["subscription", "-created_at"], name="webhookdel_sub_created"),
            models.Index(fields=["status", "next_attempt_at"], name="webhookdel_status_next"),
            # an organization's pending deliveries, oldest first: the in-flight count and the next in line
            models.Index(
                fields=["organization", "created_at"],
                name="webhookdel_org_pending",
                condition=models.Q(status="pending"),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["id", "organization"], name="webhookdel_id_org_unique"),
            SameOrganization(field="subscription", name="webhookdel_subscription_same_org"),
            SameOrganization(field="redelivery_of", name="webhookdel_redelivery_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.event_type} {self.status}"

    @property
    def body(self) -> str:
        """The JSON text posted and signed, exactly (a retry or a redelivery sends the same)."""
        return payload_body(self.payload).decode("utf-8")

    @property
    def body_pretty(self) -> str:
        """The same JSON, indented for reading; keys in the order they were sent."""
        return json.dumps(self.payload, indent=2, ensure_ascii=False)
