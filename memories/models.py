"""Memories, their links, confidence signals and per-project learned weights (docs/memory-model.md,
docs/confidence.md)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from accounts.models import ApiToken, Organization, Project, Team
from reasoningbank.ids import new_id
from reasoningbank.sharding import SameOrganization


def new_memory_id() -> str:
    return new_id("mem")


def new_session_id() -> str:
    return new_id("ses")


class Memory(models.Model):
    OUTCOME_SUCCESS, OUTCOME_FAILURE, OUTCOME_MIXED = "success", "failure", "mixed"
    OUTCOME_CHOICES = [(OUTCOME_SUCCESS, "Success"), (OUTCOME_FAILURE, "Failure"), (OUTCOME_MIXED, "Mixed")]

    KIND_WORKING, KIND_EPISODIC, KIND_SEMANTIC, KIND_PROCEDURAL = "working", "episodic", "semantic", "procedural"
    KIND_CHOICES = [
        (KIND_WORKING, "Working"),
        (KIND_EPISODIC, "Episodic"),
        (KIND_SEMANTIC, "Semantic"),
        (KIND_PROCEDURAL, "Procedural"),
    ]

    STATE_ACTIVE, STATE_ARCHIVED = "active", "archived"
    # a promotion proposal (consolidation.promotion.services) until a moderator decides it in the review
    # queue: never served, counted, listed with the archived ones, restored or archived like a memory
    STATE_PROPOSED = "proposed"
    # the instruction-smell detector flagged it and the org quarantines (docs/security/memory-poisoning.md):
    # never searched, injected, consolidated or exported as active until an admin approves it
    STATE_QUARANTINED = "quarantined"
    STATE_CHOICES = [
        (STATE_ACTIVE, "Active"),
        (STATE_ARCHIVED, "Archived"),
        (STATE_PROPOSED, "Proposed — awaiting review"),
        (STATE_QUARANTINED, "Quarantined — awaiting review"),
    ]
    # the states of memories proper: every listing, count and export leaves proposals out
    SETTLED_STATES = (STATE_ACTIVE, STATE_ARCHIVED)

    ARCHIVED_CONSOLIDATED, ARCHIVED_SUPERSEDED, ARCHIVED_DUPLICATE = "consolidated", "superseded", "duplicate"
    ARCHIVED_STALE, ARCHIVED_MANUAL = "stale", "manual"
    # the daily rollup archives a memory whose confidence stayed below the prune threshold
    # (docs/confidence.md#pruning)
    ARCHIVED_LOW_CONFIDENCE = "low_confidence"
    # every code anchor's file was deleted longer ago than the grace period (docs/code-memory.md#staleness)
    ARCHIVED_CODE_DELETED = "code_deleted"
    ARCHIVED_REASON_CHOICES = [
        (ARCHIVED_CONSOLIDATED, "Consolidated"),
        (ARCHIVED_SUPERSEDED, "Superseded"),
        (ARCHIVED_DUPLICATE, "Duplicate"),
        (ARCHIVED_STALE, "Stale"),
        (ARCHIVED_MANUAL, "Manual"),
        (ARCHIVED_LOW_CONFIDENCE, "Low confidence"),
        (ARCHIVED_CODE_DELETED, "Its code was deleted"),
    ]

    TIER_CHOICES = [("hot", "Hot"), ("warm", "Warm"), ("cold", "Cold"), ("archived", "Archived")]

    ORIGIN_RECORDED, ORIGIN_DISTILLED, ORIGIN_CONSOLIDATED, ORIGIN_EXTRACTED = (
        "recorded",
        "distilled",
        "consolidated",
        "extracted",
    )
    ORIGIN_CHOICES = [
        (ORIGIN_RECORDED, "Recorded"),
        (ORIGIN_DISTILLED, "Distilled"),
        (ORIGIN_CONSOLIDATED, "Consolidated"),
        (ORIGIN_EXTRACTED, "Extracted"),
    ]

    SCOPE_PROJECT, SCOPE_TEAM, SCOPE_ORG = "project", "team", "org"

    # whether what the hooks and memory_context inject automatically may include it without a person's
    # review (docs/security/memory-poisoning.md#injection-policy): decided from its provenance when it is
    # written, "trusted" once a person reviewed it
    TRUST_TRUSTED, TRUST_PENDING = "trusted", "pending"
    TRUST_CHOICES = [(TRUST_TRUSTED, "Trusted"), (TRUST_PENDING, "Waiting for review before injection")]

    id = models.CharField(primary_key=True, max_length=40, default=new_memory_id, editable=False)
    # place: scope is derived from which of project / team is set
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memories")
    # every reference to another tenant row is checked by the database with the organization
    # (SameOrganization in Meta, reasoningbank/sharding.py), not by Django's single-column key
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="memories", db_constraint=False
    )
    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, null=True, blank=True, related_name="memories", db_constraint=False
    )
    # content
    title = models.CharField(max_length=200)
    description = models.TextField(max_length=2000)
    content = models.TextField(max_length=20000)
    outcome = models.CharField(max_length=10, choices=OUTCOME_CHOICES)
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    kind = models.CharField(max_length=12, choices=KIND_CHOICES, default=KIND_PROCEDURAL)
    # life
    state = models.CharField(max_length=12, choices=STATE_CHOICES, default=STATE_ACTIVE)
    archived_reason = models.CharField(max_length=15, choices=ARCHIVED_REASON_CHOICES, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    consolidated_into = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="consolidated_sources",
        db_constraint=False,
    )
    tier = models.CharField(max_length=10, choices=TIER_CHOICES, default="hot")
    retention = models.FloatField(default=1.0)
    importance = models.FloatField(default=0.85)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="working memories only (short TTL)")
    # trust: confidence = alpha / (alpha + beta); the prior encodes the initial confidence
    prior_alpha = models.FloatField(default=1.6)
    prior_beta = models.FloatField(default=0.4)
    alpha = models.FloatField(default=1.6)
    beta = models.FloatField(default=0.4)
    confidence = models.FloatField(default=0.8)
    usage_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # impressions (docs/confidence.md#impressions-and-use): how often a memory was put in an agent's context
    # without being asked for (the hooks' recall, session start), which moves no confidence; the times since
    # its last use, which the daily job turns into a usage-negative signal once they reach
    # IMPRESSIONS_UNUSED_DEMOTE
    impression_count = models.PositiveIntegerField(default=0)
    impressions_unused = models.PositiveIntegerField(default=0)
    last_shown_at = models.DateTimeField(null=True, blank=True)
    # when the memory last had a confidence signal of any kind (memories/confidence/services.py writes it with the
    # signal): time decay counts the silence from here
    last_signal_at = models.DateTimeField(null=True, blank=True)
    # search
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    # memories.core.fingerprint.memory_content_hash of title, description and content: an identical record
    # in the same place returns the existing memory instead of a copy (services.memory_record)
    content_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    # title (A), description (B) and content (C), English stemming: written by PostgreSQL whenever one of them
    # is (the trigger of memories migration 0027), never by the app. Not a generated column: PostgreSQL
    # recomputes those at every UPDATE, and a fresh uncompressed vector never equals the compressed one stored,
    # so every usage update re-inserted the row into every index, the vector index included (docs/search.md#candidates)
    search_vector = SearchVectorField(null=True, editable=False)
    # provenance
    origin = models.CharField(max_length=15, choices=ORIGIN_CHOICES, default=ORIGIN_RECORDED)
    source_session = models.ForeignKey(
        "memories.AgentSession",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memories",
        db_constraint=False,
    )
    created_by_token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    created_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # the promotion ladder (consolidation/phases/ladder.py): the kind this memory was promoted from (a
    # memory made from a pattern: its sources' kind, linked to them), when, and which criterion with its
    # figures
    promoted_from = models.CharField(max_length=12, choices=KIND_CHOICES, blank=True, default="")
    promoted_at = models.DateTimeField(null=True, blank=True)
    promotion_reason = models.CharField(max_length=500, blank=True, default="")
    # who wrote it, how, through which client, when — written once at insert and never changed (a
    # database trigger refuses a change); memories older than provenance hold {} and are described from
    # the columns above (docs/security/memory-poisoning.md#provenance)
    provenance = models.JSONField(default=dict, blank=True, editable=False)
    trust = models.CharField(max_length=10, choices=TRUST_CHOICES, default=TRUST_TRUSTED)
    # what the instruction-smell detector found when it was written: [{rule, reason, field, start, end,
    # excerpt}]; non-empty on a quarantined memory, and on an active one under the "flag" policy
    flags = models.JSONField(default=list, blank=True)
    # the person who reviewed it (approved it out of quarantine, or cleared it for injection)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # a project memory belongs to the project only; its team comes through the project
            models.CheckConstraint(condition=Q(project__isnull=True) | Q(team__isnull=True), name="memory_one_place"),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="memory_confidence_0_1"),
            models.CheckConstraint(
                condition=Q(state="active", archived_reason="") | ~Q(state="active"), name="memory_active_not_archived"
            ),
            models.UniqueConstraint(fields=["id", "organization"], name="memory_id_org_unique"),
            SameOrganization(field="project", name="memory_project_same_org"),
            SameOrganization(field="team", name="memory_team_same_org"),
            SameOrganization(field="consolidated_into", name="memory_consolidated_into_same_org"),
            SameOrganization(field="source_session", name="memory_source_session_same_org"),
            SameOrganization(field="created_by_token", name="memory_created_by_token_same_org"),
        ]
        indexes = [
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="memory_search_gin"),
            # no lifecycle column (state, tier, confidence, usage) is indexed, so the frequent updates
            # of those columns stay HOT and never re-insert the row into the HNSW index
            models.Index(fields=["organization", "project", "-created_at"], name="memory_org_project_created"),
            models.Index(fields=["organization", "-created_at"], name="memory_org_created"),
            # changes only with the text, which re-embeds (never HOT anyway); lifecycle updates stay HOT
            models.Index(fields=["organization", "content_hash"], name="memory_org_content_hash"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.title}"

    @property
    def scope(self) -> str:
        return memory_scope(self.project_id, self.team_id)

    @property
    def is_active(self) -> bool:
        return self.state == self.STATE_ACTIVE


def memory_scope(project_id: int | None, team_id: int | None) -> str:
    """Where a memory lives: its project, else its team, else the whole org."""
    if project_id:
        return Memory.SCOPE_PROJECT
    if team_id:
        return Memory.SCOPE_TEAM
    return Memory.SCOPE_ORG


class MemoryLink(models.Model):
    """Every relation between memories (docs/memory-model.md#links), directed source → target."""

    KIND_CONSOLIDATES = "consolidates"  # consolidated memory → each source
    KIND_SUPERSEDES = "supersedes"  # newer/stronger → older/weaker
    KIND_CONTRADICTS = "contradicts"
    KIND_DUPLICATES = "duplicates"  # kept memory → its duplicate
    KIND_REFERENCES = "references"
    KIND_CHOICES = [
        (KIND_CONSOLIDATES, "Consolidates"),
        (KIND_SUPERSEDES, "Supersedes"),
        (KIND_CONTRADICTS, "Contradicts"),
        (KIND_DUPLICATES, "Duplicates"),
        (KIND_REFERENCES, "References"),
    ]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out", db_constraint=False)
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_in", db_constraint=False)
    kind = models.CharField(max_length=15, choices=KIND_CHOICES)
    weight = models.FloatField(default=1.0)
    reason = models.TextField(blank=True)
    # checked by consolidation's memorylink_run_same_org: its target's key is made in that app's migrations
    run = models.ForeignKey(
        "consolidation.ConsolidationRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="links",
        db_constraint=False,
    )
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="contradictions: when a moderator resolved it")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "kind", "organization"], name="memorylink_once"),
            models.CheckConstraint(condition=~Q(source=models.F("target")), name="memorylink_not_self"),
            SameOrganization(field="source", name="memorylink_source_same_org"),
            SameOrganization(field="target", name="memorylink_target_same_org"),
            SameOrganization(field="run", name="memorylink_run_same_org"),
        ]
        indexes = [models.Index(fields=["organization", "kind"], name="memorylink_org_kind")]

    def __str__(self) -> str:
        return f"{self.source_id} {self.kind} {self.target_id}"


class MemorySignal(models.Model):
    """Confidence signal events (docs/confidence.md#the-event-log-and-the-daily-rollup); events older than
    30 days are rolled up."""

    TYPE_EXPLICIT, TYPE_USAGE, TYPE_OUTCOME, TYPE_STABILITY = "explicit", "usage", "outcome", "stability"
    TYPE_CHOICES = [
        (TYPE_EXPLICIT, "Explicit"),
        (TYPE_USAGE, "Usage"),
        (TYPE_OUTCOME, "Outcome"),
        (TYPE_STABILITY, "Code stability"),
    ]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="signals", db_constraint=False)
    project = models.ForeignKey(
        Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    type = models.CharField(max_length=10, choices=TYPE_CHOICES)
    positive = models.BooleanField()
    session_id = models.CharField(max_length=200, blank=True)
    comment = models.TextField(blank=True, max_length=2000)
    actor = models.CharField(max_length=200, blank=True)
    confidence_after = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["memory", "created_at"], name="signal_memory_time"),
            models.Index(fields=["created_at"], name="signal_time"),
        ]
        constraints = [
            SameOrganization(field="memory", name="signal_memory_same_org"),
            SameOrganization(field="project", name="signal_project_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.type}{'+' if self.positive else '-'} {self.memory_id}"


class SessionMemoryUse(models.Model):
    """The injection ledger (docs/session-context.md#the-ledger): a memory handed to an agent session —
    returned by ``memory_search``, ``memory_context`` or ``memory_recall`` called with the session's id — so that the
    session's outcome (``memory_outcome`` or ``session_submit`` with that id) reaches every memory it
    was given, once."""

    VIA_SEARCH, VIA_CONTEXT, VIA_RECALL, VIA_GET = "search", "context", "recall", "get"
    VIA_CHOICES = [
        (VIA_SEARCH, "Search"), (VIA_CONTEXT, "Session context"), (VIA_RECALL, "Recall at tool time"),
        (VIA_GET, "Read by id"),
    ]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    session_key = models.CharField(max_length=200, help_text="the agent's own session id")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="session_uses", db_constraint=False)
    via = models.CharField(max_length=10, choices=VIA_CHOICES)
    created_at = models.DateTimeField(default=timezone.now)
    # the session's outcome once it reached this memory ("success" / "failure"; empty until then)
    outcome = models.CharField(max_length=10, blank=True, default="")
    outcome_at = models.DateTimeField(null=True, blank=True)
    # what became of the session's code once a report reached this memory (session_code_report: "kept"
    # or "reverted"; empty until then). The first verdict is final, so the signal is written once.
    stability = models.CharField(max_length=10, blank=True, default="")
    stability_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "session_key", "memory"], name="session_use_once"),
            SameOrganization(field="memory", name="session_use_memory_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.session_key} → {self.memory_id}"


class SessionCommit(models.Model):
    """A git commit made by an agent session (docs/session-context.md#code-stability): a post-commit hook
    ties it to the session (``session_code_report`` with status committed), so that a CI job that only
    knows the commit can later report it kept or reverted, and the verdict reaches the memories the
    session was given (``SessionMemoryUse``)."""

    STATUS_COMMITTED, STATUS_KEPT, STATUS_REVERTED = "committed", "kept", "reverted"
    STATUS_CHOICES = [
        (STATUS_COMMITTED, "Committed (no verdict yet)"),
        (STATUS_KEPT, "Kept for 7 days"),
        (STATUS_REVERTED, "Reverted"),
    ]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    session_key = models.CharField(max_length=200, help_text="the agent's own session id")
    commit = models.CharField(max_length=64, help_text="the full git sha (40 or 64 hex digits), lower case")
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_COMMITTED)
    reported_by = models.CharField(max_length=200, blank=True, help_text="who tied it (a token or user label)")
    created_at = models.DateTimeField(default=timezone.now)
    verdict_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "commit"], name="session_commit_once")]
        indexes = [models.Index(fields=["organization", "session_key"], name="session_commit_session")]

    def __str__(self) -> str:
        return f"{self.commit[:12]} of {self.session_key} ({self.status})"


class MemorySignalAggregate(models.Model):
    """Rolled-up counts of signal events older than the event log keeps."""

    memory = models.OneToOneField(
        Memory, on_delete=models.CASCADE, primary_key=True, related_name="signal_aggregate", db_constraint=False
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    explicit_pos = models.PositiveIntegerField(default=0)
    explicit_neg = models.PositiveIntegerField(default=0)
    usage_pos = models.PositiveIntegerField(default=0)
    usage_neg = models.PositiveIntegerField(default=0)
    outcome_pos = models.PositiveIntegerField(default=0)
    outcome_neg = models.PositiveIntegerField(default=0)
    stability_pos = models.PositiveIntegerField(default=0)
    stability_neg = models.PositiveIntegerField(default=0)
    last_rollup = models.DateTimeField(default=timezone.now)
    # Time decay of these counts (docs/confidence.md#time-decay; memories/confidence/services.py,
    # signals_decay): the evidence each still carries, a float the daily rollup shrinks for every silent
    # day and later signals add to at full weight. NULL until the first decay: the count itself. The
    # counts stay whole (pruning's and the ladder's "how many signals") and the weights apply at
    # recompute, so learning re-weights it all.
    explicit_pos_kept = models.FloatField(null=True, blank=True)
    explicit_neg_kept = models.FloatField(null=True, blank=True)
    usage_pos_kept = models.FloatField(null=True, blank=True)
    usage_neg_kept = models.FloatField(null=True, blank=True)
    outcome_pos_kept = models.FloatField(null=True, blank=True)
    outcome_neg_kept = models.FloatField(null=True, blank=True)
    stability_pos_kept = models.FloatField(null=True, blank=True)
    stability_neg_kept = models.FloatField(null=True, blank=True)
    # when decay was last applied: its UTC date is the last day already decayed, so a second rollup
    # that day decays nothing and a missed day is caught up by the next one
    decayed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [SameOrganization(field="memory", name="signal_aggregate_memory_same_org")]

    def __str__(self) -> str:
        return f"aggregate {self.memory_id}"


class ProjectSignalWeights(models.Model):
    """Learned Beta parameters per signal type (docs/confidence.md#learned-weights). project NULL =
    org-wide weights, used for team- and org-scoped memories."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_constraint=False
    )
    explicit_alpha = models.FloatField(default=7.0)
    explicit_beta = models.FloatField(default=3.0)
    usage_alpha = models.FloatField(default=5.0)
    usage_beta = models.FloatField(default=5.0)
    outcome_alpha = models.FloatField(default=5.0)
    outcome_beta = models.FloatField(default=5.0)
    stability_alpha = models.FloatField(default=5.0)
    stability_beta = models.FloatField(default=5.0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "project"], name="weights_unique_per_project", nulls_distinct=False
            ),
            SameOrganization(field="project", name="weights_project_same_org"),
        ]

    def __str__(self) -> str:
        return f"weights org={self.organization_id} project={self.project_id}"


class AgentSession(models.Model):
    """A finished agent session handed in for distillation (filled in by the distillation work)."""

    STATUS_QUEUED, STATUS_RUNNING, STATUS_DONE = "queued", "running", "done"
    STATUS_FAILED, STATUS_WAITING = "failed", "waiting_for_llm"
    # a call would cross one of the org's LLM caps: resumed when the period turns (next_attempt_at) or
    # the caps move (docs/llm-spend.md#what-waits)
    STATUS_WAITING_BUDGET = "waiting_for_budget"
    # distilled, but its output tripped the instruction-smell detector: its memories wait in quarantine
    # and ``held`` lists the spans that fired (docs/security/memory-poisoning.md#distillation)
    STATUS_HELD = "held"
    STATUS_CHOICES = [
        (STATUS_QUEUED, "Queued"),
        (STATUS_RUNNING, "Running"),
        (STATUS_DONE, "Done"),
        (STATUS_FAILED, "Failed"),
        (STATUS_WAITING, "Waiting for LLM"),
        (STATUS_WAITING_BUDGET, "Waiting for LLM budget"),
        (STATUS_HELD, "Held for review"),
    ]
    OUTCOME_CHOICES = [("success", "Success"), ("failure", "Failure"), ("unknown", "Unknown")]

    id = models.CharField(primary_key=True, max_length=40, default=new_session_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sessions")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions", db_constraint=False)
    external_id = models.CharField(max_length=200)
    outcome = models.CharField(max_length=10, choices=OUTCOME_CHOICES, default="unknown")
    trace = models.TextField()
    redactions = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=STATUS_QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    raw_reply = models.TextField(blank=True, help_text="the LLM's last unparseable reply, for moderators")
    warnings = models.JSONField(
        default=list, blank=True, help_text="what distillation left out and why (the write gate's rejections)"
    )
    held = models.JSONField(
        default=list, blank=True, help_text="the detector's findings on the distilled output that held it for review"
    )
    # the files its transcript shows read and edited, the tests run, the errors met: what its distilled
    # memories are anchored to (memories/code/transcript_anchors.py, docs/code-memory.md#distillation)
    places = models.JSONField(default=list, blank=True, editable=False)
    # who handed it in, how and through which client: the provenance its distilled memories inherit
    submitted_provenance = models.JSONField(default=dict, blank=True, editable=False)
    submitted_by_token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    # a session handed in again after its distillation is distilled again for what follows this offset in
    # ``trace`` (characters), once per round (docs/memory-model.md#sessions-that-continue)
    distilled_upto = models.PositiveIntegerField(default=0)
    rounds = models.PositiveIntegerField(default=0, help_text="how many times it was distilled")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # while running: stamped every WORK_HEARTBEAT_INTERVAL by the worker distilling it, and which
    # process that is ("<host>/<pid>"); a stale or dead one puts the session back in the queue
    # (memories.sessions.services.sessions_recover_stale, docs/operations.md)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id", "organization"], name="session_external_id_once_in_project"
            ),
            models.UniqueConstraint(fields=["id", "organization"], name="session_id_org_unique"),
            SameOrganization(field="project", name="session_project_same_org"),
            SameOrganization(field="submitted_by_token", name="session_submitted_by_token_same_org"),
        ]
        indexes = [models.Index(fields=["organization", "status", "-created_at"], name="session_org_status")]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class DetectorException(models.Model):
    """What an admin's approval taught the instruction-smell detector for one org: a finding of ``rule``
    on text whose normalised excerpt has this ``fingerprint`` is not raised again
    (docs/security/memory-poisoning.md#quarantine)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(max_length=60)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the finding's normalised excerpt")
    excerpt = models.CharField(max_length=300, blank=True)
    memory_id = models.CharField(max_length=40, blank=True, help_text="the approved memory that taught it")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "rule", "fingerprint"], name="detector_exception_once"),
        ]

    def __str__(self) -> str:
        return f"{self.rule} {self.fingerprint[:12]} in {self.organization_id}"


# consolidated summaries live in their own module (its size); imported here so the app registers the
# model and ``memories.models`` stays the one place to import every model of the app from
from memories.models_code import CodeCommit, MemoryAnchor  # noqa: E402, F401
from memories.models_history import HistorySeed, SeededCommit  # noqa: E402, F401
from memories.models_summary import MemorySummary, new_summary_id  # noqa: E402, F401
