"""Cross-cutting records: every LLM call, per org (the basis of cost metering), and the worker's heartbeat."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from reasoningbank.ai.purposes import UnknownPurpose, purpose_label, purpose_require


def purpose_validate(value: str) -> None:
    """A purpose some app registered (``reasoningbank.ai.purposes``): checked in Python, so a new
    purpose needs no migration."""
    try:
        purpose_require(value)
    except UnknownPurpose as exc:
        raise ValidationError(str(exc)) from None


class LlmCallQuerySet(models.QuerySet["LlmCall"]):
    def for_subject(self, subject: models.Model) -> LlmCallQuerySet:
        """The calls made for ``subject`` (a consolidation run, an agent session, ...)."""
        return self.filter(subject_type=subject._meta.label_lower, subject_id=str(subject.pk))


class LlmCall(models.Model):
    """One LLM call on behalf of an org, whatever it was for: the basis of cost metering.

    What the call was made for is a generic reference (``subject_type``: the model's label, e.g.
    ``consolidation.consolidationrun``; ``subject_id``: its primary key), not a foreign key into the
    apps: the kernel knows no app, and an app that needs its calls asks ``for_subject``."""

    OUTCOME_OK, OUTCOME_ERROR = "ok", "error"

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="llm_calls")
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    # a purpose registered by the app making the call (reasoningbank/ai/purposes.py)
    purpose = models.CharField(max_length=20, validators=[purpose_validate])
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # the server did not count (all of) the tokens: they are estimated (reasoningbank/ai/llm.py, docs/llm.md)
    tokens_estimated = models.BooleanField(default=False)
    latency_ms = models.FloatField(default=0.0)
    attempts = models.PositiveSmallIntegerField(default=1)
    outcome = models.CharField(max_length=10, default=OUTCOME_OK)
    error = models.TextField(blank=True)
    subject_type = models.CharField(max_length=100, blank=True)
    subject_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = LlmCallQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "created_at"], name="llmcall_org_time"),
            models.Index(fields=["subject_type", "subject_id"], name="llmcall_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.provider}:{self.model} {self.input_tokens}+{self.output_tokens}"

    @property
    def purpose_label(self) -> str:
        return purpose_label(self.purpose)


class WorkerHeartbeat(models.Model):
    """The last time a django-q2 cluster ran its heartbeat task (one row per cluster name).

    Written by the ``rb:worker-heartbeat`` schedule every minute, read by ``/readyz`` and the
    dashboard banner (``reasoningbank.health``). Not tenant data: one row describes the service.
    """

    cluster = models.CharField(max_length=100, primary_key=True)
    beat_at = models.DateTimeField()
    host = models.CharField(max_length=255, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.cluster} beat at {self.beat_at:%Y-%m-%d %H:%M:%S}"
