"""Consolidation runs: one row per cycle, with phase progress, counters and the dry-run preview."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import ApiToken, Organization, Project
from consolidation.phases.registry import counters_empty
from reasoningbank.ids import new_id
from reasoningbank.sharding import SameOrganization


def new_run_id() -> str:
    return new_id("run")


def empty_counters() -> dict[str, int]:
    """A new run's counters, every one at zero: those the phases declare (``consolidation.phases.registry``)."""
    return counters_empty()


class ConsolidationRun(models.Model):
    TRIGGER_MANUAL, TRIGGER_SCHEDULED, TRIGGER_ON_DEMAND = "manual", "scheduled", "on_demand"
    TRIGGER_CHOICES = [(TRIGGER_MANUAL, "Manual"), (TRIGGER_SCHEDULED, "Scheduled"), (TRIGGER_ON_DEMAND, "On demand")]

    STATUS_QUEUED, STATUS_RUNNING, STATUS_COMPLETED = "queued", "running", "completed"
    # waiting: an LLM call would have crossed one of the organization's caps (docs/llm-spend.md#what-waits);
    # the run holds its project's place and is queued again at ``resume_at`` (the period's turn) or when
    # the caps move. Without any LLM a run does not wait: it completes and leaves the LLM's work for later.
    STATUS_FAILED, STATUS_SKIPPED, STATUS_WAITING = "failed", "skipped", "waiting_for_budget"
    # waiting for its LLM batch (docs/llm-spend.md#batch-mode): a scheduled run in batch mode sent the calls
    # it could not answer yet to the provider's batch API; it is queued again once the batch ended
    STATUS_WAITING_BATCH = "waiting_for_batch"
    STATUS_CHOICES = [
        (STATUS_QUEUED, "Queued"),
        (STATUS_RUNNING, "Running"),
        (STATUS_COMPLETED, "Completed"),
        (STATUS_FAILED, "Failed"),
        (STATUS_SKIPPED, "Skipped"),
        (STATUS_WAITING, "Waiting for LLM budget"),
        (STATUS_WAITING_BATCH, "Waiting for its LLM batch"),
    ]
    # the statuses that hold the project's one place: a second run is refused while one of these exists
    STATUSES_ACTIVE = (STATUS_QUEUED, STATUS_RUNNING, STATUS_WAITING, STATUS_WAITING_BATCH)

    id = models.CharField(primary_key=True, max_length=40, default=new_run_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="consolidation_runs")
    # references to other tenant rows are checked with the organization (SameOrganization, reasoningbank/sharding.py)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="consolidation_runs", db_constraint=False
    )
    trigger = models.CharField(max_length=10, choices=TRIGGER_CHOICES, default=TRIGGER_MANUAL)
    options = models.JSONField(default=dict, blank=True)
    dry_run = models.BooleanField(default=False)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=STATUS_QUEUED)
    phase = models.CharField(max_length=20, blank=True)
    # waiting for the LLM budget: when it is queued again (the turn of the period whose cap it hit);
    # once queued again, when that happened (a worker must claim it within CONSOLIDATION_QUEUE_TIMEOUT of it)
    resume_at = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0)
    phase_durations = models.JSONField(default=dict, blank=True)
    counters = models.JSONField(default=empty_counters, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    preview = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    llm_calls = models.PositiveIntegerField(default=0)
    llm_input_tokens = models.PositiveIntegerField(default=0)
    llm_output_tokens = models.PositiveIntegerField(default=0)
    requested_by_token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    requested_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # stamped every WORK_HEARTBEAT_INTERVAL while the run executes; stale, the run is failed
    # (consolidation.runs.runs_recover_stale, docs/operations.md)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # the process executing it, "<host>/<pid>": a worker that restarts on that host fails it at once
    worker = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "project", "-created_at"], name="run_org_project_time")]
        constraints = [
            # a project never runs twice at once: at most one queued/running/waiting run per project
            models.UniqueConstraint(
                fields=["project", "organization"],
                condition=models.Q(status__in=["queued", "running", "waiting_for_budget", "waiting_for_batch"]),
                name="run_one_active_in_project",
            ),
            models.UniqueConstraint(fields=["id", "organization"], name="run_id_org_unique"),
            SameOrganization(field="project", name="run_project_same_org"),
            SameOrganization(field="requested_by_token", name="run_requested_by_token_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class ProjectConsolidationSettings(models.Model):
    """Per-project schedule (Teams plan and above) and defaults for its runs."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="consolidation", db_constraint=False
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    scheduled = models.BooleanField(default=True, help_text="run automatically (needs the Teams plan)")
    interval_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="empty = the server default")
    similarity_threshold = models.FloatField(null=True, blank=True, help_text="empty = the server default")
    updated_at = models.DateTimeField(default=timezone.now)
    # runs that failed in a row (reset by a completed run): automatic runs wait until retry_after,
    # CONSOLIDATION_FAILURE_BACKOFF doubled per failure up to CONSOLIDATION_FAILURE_BACKOFF_MAX
    consecutive_failures = models.PositiveIntegerField(default=0)
    retry_after = models.DateTimeField(null=True, blank=True)
    last_failed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        constraints = [SameOrganization(field="project", name="consolidation_settings_project_same_org")]

    def __str__(self) -> str:
        return f"consolidation settings for {self.project_id}"


class NeighbourGraph(models.Model):
    """The project's stored similarity graph (its k-NN edges from the pgvector index), so a run only
    probes the index for memories created or changed since the graph was last brought up to date,
    plus the slice of memories whose last probe is a week old (``consolidation.graph_slices``);
    the first run, a lower similarity floor, a bigger k or new embedding models rebuild it whole.
    A cache of the index, not data: dropping it only makes the next run probe every memory."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="+", db_constraint=False
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    built_at = models.DateTimeField(help_text="start of the run that last updated the graph")
    rebuilt_at = models.DateTimeField(help_text="start of the run that last probed every memory")
    min_similarity = models.FloatField(help_text="edges below this were not kept")
    neighbours = models.PositiveSmallIntegerField(help_text="k of the k-NN probes")
    embedding_models = models.JSONField(default=list, blank=True)
    edge_count = models.PositiveIntegerField(default=0)
    slices_probed_at = models.JSONField(
        default=list, blank=True, help_text="when each slice of memories was last probed (ISO times)"
    )

    class Meta:
        constraints = [SameOrganization(field="project", name="neighbour_graph_project_same_org")]

    def __str__(self) -> str:
        return f"neighbour graph of {self.project_id} ({self.edge_count} edges)"


class NeighbourEdge(models.Model):
    """One undirected edge (memory ids ``source < target``) of a project's stored neighbour graph.
    Plain memory ids and no database-level foreign keys: memories are never deleted, and a full
    rebuild writing tens of thousands of edges should not pay for constraint triggers on each
    (deleting a project still cascades through the ORM)."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    source = models.CharField(max_length=40)
    target = models.CharField(max_length=40)
    similarity = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "source", "target", "organization"], name="neighbouredge_pair_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} ~ {self.target} ({self.similarity:.3f})"


class ReviewItem(models.Model):
    """A judgement on a pair of close memories (docs/consolidation.md#the-review-queue-and-disputes):
    whether they may be merged. Nothing is
    merged or synthesised together without one. The LLM judge writes one for every pair it reads
    (``judged``: compatible or contradicts). A pair whose texts carry conflict cues
    (``consolidation.cues``; kind ``conflict``) is never merged on similarity alone: the judge settles
    it, and without one, or when the judge is unsure, it waits here as "needs review" until a
    moderator accepts (they contradict) or rejects (they agree).

    Kind ``promotion`` (docs/consolidation.md#institutional-promotion) is no pair: ``first`` is a
    consolidated memory proposed for team or org scope (state ``proposed``, tier ``archived``, until
    decided), linked ``consolidates`` to the source memory of every project (team) it holds in; it has
    no ``project`` and no ``second``. ``source_key`` names its source set, so a set is proposed once,
    whatever became of it (``consolidation.promotion.services``)."""

    KIND_CONFLICT, KIND_JUDGED, KIND_PROMOTION = "conflict", "judged", "promotion"
    KIND_CHOICES = [
        (KIND_CONFLICT, "Similar memories with conflict cues"),
        (KIND_JUDGED, "A pair the judge read"),
        (KIND_PROMOTION, "A memory proposed for team or org scope"),
    ]
    PAIR_KINDS = (KIND_CONFLICT, KIND_JUDGED)
    STATUS_PENDING, STATUS_CONTRADICTS, STATUS_COMPATIBLE = "pending", "contradicts", "compatible"
    STATUS_ACCEPTED, STATUS_REJECTED = "accepted", "rejected"  # promotions
    STATUS_CHOICES = [
        (STATUS_PENDING, "Needs review"),
        (STATUS_CONTRADICTS, "They contradict"),
        (STATUS_COMPATIBLE, "They agree"),
        (STATUS_ACCEPTED, "Promoted"),
        (STATUS_REJECTED, "Not promoted"),
    ]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    # empty for a promotion: it belongs to a team or the whole org (its ``first`` memory says which)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="review_items", db_constraint=False
    )
    kind = models.CharField(max_length=10, choices=KIND_CHOICES, default=KIND_CONFLICT)
    # the pair, older first; for a promotion, ``first`` is the proposed memory and there is no second
    first = models.ForeignKey("memories.Memory", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    second = models.ForeignKey(
        "memories.Memory", on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_constraint=False
    )
    # promotions: sha256 of the sorted source memory ids (consolidation.promotion.rules.source_set_key)
    source_key = models.CharField(max_length=64, blank=True, default="")
    similarity = models.FloatField()
    cues = models.JSONField(default=list, blank=True, help_text="what differs, e.g. 'numbers: time: 5 vs 60'")
    status = models.CharField(max_length=12, choices=STATUS_CHOICES, default=STATUS_PENDING)
    decided_by = models.CharField(max_length=200, blank=True, help_text="'judge' or who decided")
    reason = models.TextField(blank=True, max_length=2000)
    run = models.ForeignKey(
        ConsolidationRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["first", "second", "organization"], name="reviewitem_pair_once_in_org"),
            # a source set is proposed for promotion once: rejected, it is not proposed again
            models.UniqueConstraint(
                fields=["organization", "source_key"],
                condition=models.Q(kind="promotion"),
                name="reviewitem_promotion_once",
            ),
            # a pair has its project and both memories; a promotion neither project nor second, but sources
            models.CheckConstraint(
                condition=(
                    models.Q(kind="promotion", project__isnull=True, second__isnull=True) & ~models.Q(source_key="")
                )
                | (~models.Q(kind="promotion") & models.Q(project__isnull=False, second__isnull=False)),
                name="reviewitem_kind_shape",
            ),
            SameOrganization(field="project", name="reviewitem_project_same_org"),
            SameOrganization(field="first", name="reviewitem_first_same_org"),
            SameOrganization(field="second", name="reviewitem_second_same_org"),
            SameOrganization(field="run", name="reviewitem_run_same_org"),
        ]
        indexes = [models.Index(fields=["organization", "project", "status"], name="reviewitem_org_project_status")]

    def __str__(self) -> str:
        if self.kind == self.KIND_PROMOTION:
            return f"promotion of {self.first_id} ({self.status})"
        return f"{self.kind} {self.first_id} ~ {self.second_id} ({self.status})"

    @property
    def is_promotion(self) -> bool:
        return self.kind == self.KIND_PROMOTION
