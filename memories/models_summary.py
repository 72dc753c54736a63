"""Consolidated summaries: what a consolidation run learned from a cluster, kept beside the memory it
produced (docs/consolidation.md)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from accounts.models import Organization, Project
from reasoningbank.ids import new_id
from reasoningbank.sharding import SameOrganization


def new_summary_id() -> str:
    return new_id("sum")


class MemorySummary(models.Model):
    """What a consolidation run learned from one cluster — a short summary, key facts, decisions and
    superseded facts — kept beside the consolidated memory it produced, so a session can start with it
    (``memory_context``) and search can return it (``include_summaries``).

    A reply that cannot be parsed even after repair is kept as ``rejected`` with its error and the
    raw text (as session distillation does), and never injected."""

    STATUS_READY, STATUS_REJECTED = "ready", "rejected"
    # the instruction-smell detector flagged its text: never injected until an admin approves it
    STATUS_HELD = "held"
    STATUS_CHOICES = [
        (STATUS_READY, "Ready"),
        (STATUS_REJECTED, "Rejected (unparseable reply)"),
        (STATUS_HELD, "Held for review (flagged)"),
    ]

    id = models.CharField(primary_key=True, max_length=40, default=new_summary_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memory_summaries", db_constraint=False)
    # the consolidated memory; its state and live confidence decide whether the summary is still served.
    # One per memory (summary_once_per_memory): a foreign key, not a one-to-one, because the uniqueness
    # must include the organization (docs/operations.md#distributed-by-organization); that index serves
    # the lookups by memory too.
    memory = models.ForeignKey(
        "memories.Memory",
        on_delete=models.CASCADE,
        related_name="summaries",
        related_query_name="summary",
        db_constraint=False,
        db_index=False,
    )
    source_memory_ids = ArrayField(models.CharField(max_length=40), default=list)
    # a plain id, not a foreign key: memories never depend on the consolidation app
    # (docs/architecture.md#the-never-arrows)
    consolidation_run_id = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_READY)
    summary = models.TextField(max_length=4000, blank=True)
    key_facts = models.JSONField(default=list, blank=True)
    decisions = models.JSONField(default=list, blank=True)  # [{decision, rationale, outcome, confidence}]
    superseded_facts = models.JSONField(default=list, blank=True)  # [{original_fact, superseded_by, source_memory_id}]
    confidence = models.FloatField(default=0.5, help_text="the consolidated memory's confidence when written")
    temporal_start = models.DateTimeField()
    temporal_end = models.DateTimeField()
    error = models.TextField(blank=True)
    flags = models.JSONField(default=list, blank=True, help_text="the detector's findings on a held summary")
    raw_reply = models.TextField(blank=True, help_text="the LLM's reply when it could not be parsed")
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    activation_count = models.PositiveIntegerField(default=0)
    last_activated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "project", "-created_at"], name="summary_org_project"),
            # every search ranks the summaries in reach by similarity (include_summaries): with the
            # index that is a few hundred microseconds instead of a scan of the org's summaries
            HnswIndex(
                name="summary_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["memory", "organization"], name="summary_once_per_memory"),
            SameOrganization(field="project", name="summary_project_same_org"),
            SameOrganization(field="memory", name="summary_memory_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.id} of {self.memory_id}"
