"""Cross-cutting records: every LLM call, per org (the basis of cost metering), and the worker's liveness stamps."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from reasoningbank.ai.budget_rules import DEFAULT_ALERT_PERCENT
from reasoningbank.ai.purposes import UnknownPurpose, purpose_label, purpose_require
from reasoningbank.ids import new_id
from reasoningbank.sharding import SameOrganization


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
    # of input_tokens: those the provider read from its prompt cache (billed lower), and those it wrote to
    # it (Anthropic bills writes above the input price) (docs/llm.md#prompt-caching)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    # answered through a provider's batch API (docs/llm-spend.md#batch-mode): billed at about half price
    batch = models.BooleanField(default=False)
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
    """When a worker last proved itself alive. Two kinds of rows: one per cluster name, the last time the
    queue probe ran (the ``rb:queue-probe`` schedule, every minute), read by ``/readyz`` and the dashboard
    banner (``reasoningbank.health``); and one per worker process group, ``<cluster>@<host>/<pid>``, its
    presence stamped by itself (``reasoningbank.worker_presence``), read by the system page. The name
    predates the two (renaming the model would need a migration). Not tenant data: one row describes the service.
    """

    cluster = models.CharField(max_length=100, primary_key=True)
    beat_at = models.DateTimeField()
    host = models.CharField(max_length=255, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.cluster} beat at {self.beat_at:%Y-%m-%d %H:%M:%S}"


class LlmBudget(models.Model):
    """An organization's own caps on its LLM tokens (docs/llm-spend.md), set by its admins: per UTC day
    and per UTC month, each optional and never above the plan's ``llm_tokens_per_month``, and the
    percentage of a cap at which its admins are warned once per period."""

    organization = models.OneToOneField(
        "accounts.Organization", on_delete=models.CASCADE, primary_key=True, related_name="llm_budget"
    )
    daily_tokens = models.PositiveBigIntegerField(null=True, blank=True, help_text="empty: no daily cap")
    monthly_tokens = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="empty: the plan's monthly budget only"
    )
    alert_percent = models.PositiveSmallIntegerField(
        null=True, blank=True, default=DEFAULT_ALERT_PERCENT, help_text="warn at this share of a cap; empty: no warning"
    )
    # also touched by a plan change: work waiting for the budget is resumed when its caps moved
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"LLM budget of organization {self.organization_id}"


class LlmBudgetPeriod(models.Model):
    """The tokens one organization spent (``used_tokens``) and holds for calls in flight (their likely
    costs in ``reserved_tokens``, the most they can cost in ``ceiling_tokens``) in one UTC day or month:
    the counter every LLM call is admitted against under a row lock, so concurrent workers never spend
    past a cap by more than one call (``reasoningbank.ai.budget``). ``over_reported_tokens``: what
    providers reported beyond what their calls could spend, shown but not charged."""

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    period = models.CharField(max_length=5)  # "day" or "month" (reasoningbank.ai.budget_rules)
    start = models.DateField()
    used_tokens = models.BigIntegerField(default=0)
    reserved_tokens = models.BigIntegerField(default=0)
    ceiling_tokens = models.BigIntegerField(default=0)
    over_reported_tokens = models.BigIntegerField(default=0)
    alerted_at = models.DateTimeField(null=True, blank=True)  # the soft alert, sent once per period
    reached_at = models.DateTimeField(null=True, blank=True)  # a call first waited at the cap

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "period", "start"], name="llmbudgetperiod_one_per_period")
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.period} {self.start}: {self.used_tokens} used"


class LlmPrice(models.Model):
    """What the operator pays a provider per million tokens of a model, for the spend page's
    estimated cost (edited in the admin: prices change more often than the service is deployed). An
    empty ``model`` is the provider's price for every model without its own row."""

    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100, blank=True)
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4)
    # prompt-cache prices (docs/llm-spend.md#estimated-cost); empty: those tokens cost the input price
    cached_input_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    cache_write_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    currency = models.CharField(max_length=3, default="USD")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="llmprice_one_per_model")]
        ordering = ["provider", "model"]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model or '*'} {self.input_per_million}/{self.output_per_million} per M"


def new_batch_id() -> str:
    return new_id("llmb")


class LlmBatch(models.Model):
    """Requests sent together through a provider's batch API on behalf of one subject (a scheduled
    consolidation run: docs/llm-spend.md#batch-mode). It holds the tokens it reserved against its
    organization's budget until its results are stored and metered."""

    STATUS_SUBMITTED, STATUS_ENDED, STATUS_FAILED = "submitted", "ended", "failed"
    STATUS_CHOICES = [
        (STATUS_SUBMITTED, "With the provider"),
        (STATUS_ENDED, "Results stored"),
        (STATUS_FAILED, "Failed: its requests are made directly"),
    ]

    id = models.CharField(primary_key=True, max_length=40, default=new_batch_id, editable=False)
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    provider_batch_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_SUBMITTED)
    provider_status = models.CharField(max_length=20, blank=True, help_text="what the provider said last")
    error = models.TextField(blank=True)
    request_count = models.PositiveIntegerField(default=0)
    # the budget reservation it holds (reasoningbank.ai.budget.Reservation): tokens, when, on which counters
    reserved_tokens = models.PositiveBigIntegerField(default=0)
    reserved_at = models.DateTimeField(null=True, blank=True)
    reserved_period_ids = models.JSONField(default=list, blank=True)
    subject_type = models.CharField(max_length=100, blank=True)
    subject_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    polled_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["subject_type", "subject_id"], name="llmbatch_subject"),
            models.Index(fields=["status"], name="llmbatch_status", condition=models.Q(status="submitted")),
        ]
        constraints = [models.UniqueConstraint(fields=["id", "organization"], name="llmbatch_id_org_unique")]

    def __str__(self) -> str:
        return f"{self.id} {self.provider}:{self.model} {self.status} ({self.request_count} requests)"


class LlmBatchRequest(models.Model):
    """One request of a batch, named by ``key`` (a hash of model, system prompt, prompt and max_tokens:
    ``reasoningbank.ai.batch_services.request_key``), and its answer once the batch ended. Neither prompt
    nor reply text is kept beyond what the run that asked needs: the reply only."""

    OUTCOME_PENDING, OUTCOME_OK, OUTCOME_ERROR, OUTCOME_LOST = "pending", "ok", "error", "lost"
    OUTCOME_CHOICES = [
        (OUTCOME_PENDING, "Waiting for the batch"),
        (OUTCOME_OK, "Answered"),
        (OUTCOME_ERROR, "Refused by the provider"),
        # expired, cancelled, or failed in a way worth trying again: the run makes the call directly
        (OUTCOME_LOST, "Not answered: made directly"),
    ]

    # the batch's; the database checks both together (SameOrganization, reasoningbank/sharding.py)
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey(LlmBatch, on_delete=models.CASCADE, related_name="requests", db_constraint=False)
    key = models.CharField(max_length=64, help_text="also the request's custom_id at the provider")
    purpose = models.CharField(max_length=20, validators=[purpose_validate])
    outcome = models.CharField(max_length=10, choices=OUTCOME_CHOICES, default=OUTCOME_PENDING)
    text = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "key", "organization"], name="llmbatchrequest_once_per_batch"),
            SameOrganization(field="batch", name="llmbatchrequest_batch_same_org"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id}/{self.key[:12]} {self.purpose} {self.outcome}"
