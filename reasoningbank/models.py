"""Cross-cutting records: every LLM call, per org (the basis of cost metering)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class LlmCall(models.Model):
    PURPOSE_CHOICES = [
        ("distill", "Distill session"),
        ("synthesize", "Synthesize cluster"),
        ("judge", "Contradiction judge"),
        ("supersede", "Supersession check"),
        ("patterns", "Pattern extraction"),
        ("summarize", "Summarize cluster"),
        ("reason", "Reasoned answer (memory_ask)"),
        ("other", "Other"),
    ]
    OUTCOME_OK, OUTCOME_ERROR = "ok", "error"

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="llm_calls")
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    purpose = models.CharField(max_length=20, choices=PURPOSE_CHOICES)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    attempts = models.PositiveSmallIntegerField(default=1)
    outcome = models.CharField(max_length=10, default=OUTCOME_OK)
    error = models.TextField(blank=True)
    session = models.ForeignKey(
        "memories.AgentSession", on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_calls"
    )
    run = models.ForeignKey(
        "consolidation.ConsolidationRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_call_log"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "created_at"], name="llmcall_org_time")]

    def __str__(self) -> str:
        return f"{self.purpose} {self.provider}:{self.model} {self.input_tokens}+{self.output_tokens}"


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
