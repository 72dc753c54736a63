"""A repository's history seeded into a project (docs/code-memory.md#seeding-from-history): how far the
seeding has read, and which commits it has handed in — each once, so that a re-run after a force-push,
which reads the rewritten history again, submits only the commits the service has not seen."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Organization, Project
from reasoningbank.sharding import SameOrganization


class HistorySeed(models.Model):
    """One repository's seeding into one project: the newest commit it read and what it produced."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    # the composite keys below (SameOrganization) are the database's references
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="history_seeds", db_constraint=False)
    # the normalised git remote (memories.code.anchors.repository_normalise)
    repository = models.CharField(max_length=300)
    last_commit = models.CharField(max_length=64, blank=True, default="", help_text="the newest commit read")
    commits = models.PositiveIntegerField(default=0, help_text="commits handed in")
    batches = models.PositiveIntegerField(default=0, help_text="sessions submitted for distillation")
    episodic = models.PositiveIntegerField(default=0, help_text="commit messages kept as memories without an LLM")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["id", "organization"], name="historyseed_id_org_unique"),
            SameOrganization(field="project", name="historyseed_project_same_org"),
            models.UniqueConstraint(
                fields=["organization", "project", "repository"], name="historyseed_one_per_repository"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.repository} → {self.project_id} @ {self.last_commit[:12]}"


class SeededCommit(models.Model):
    """A commit a seeding handed in, with the session (batch) it went into."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    seed = models.ForeignKey(HistorySeed, on_delete=models.CASCADE, related_name="seeded_commits", db_constraint=False)
    sha = models.CharField(max_length=64)
    session = models.ForeignKey(
        "memories.AgentSession", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )

    class Meta:
        constraints = [
            SameOrganization(field="seed", name="seededcommit_seed_same_org"),
            SameOrganization(field="session", name="seededcommit_session_same_org"),
            models.UniqueConstraint(fields=["organization", "seed", "sha"], name="seededcommit_once"),
        ]
        indexes = [models.Index(fields=["seed", "session"], name="seededcommit_seed_session")]

    def __str__(self) -> str:
        return f"{self.sha[:12]} ({self.seed_id})"
