"""What starts a run besides a person: the per-project schedule (Teams plan) and on-demand
consolidation after enough new memories; and the per-project consolidation settings.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.access import Principal, system_principal
from accounts.models import SCOPE_CONSOLIDATION_RUN, Project
from accounts.plans.catalogue import FEATURE_CONSOLIDATION_SCHEDULED
from accounts.services import audit_record
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from consolidation.run_state import RunOptions
from consolidation.runs import consolidation_enqueue, consolidation_request
from consolidation.selectors import project_consolidation_due
from consolidation.validation import feature_require
from reasoningbank.errors import Conflict, Forbidden, InvalidInput

logger = logging.getLogger("consolidation")


def project_settings_get(project: Project) -> ProjectConsolidationSettings:
    row, _ = ProjectConsolidationSettings.objects.get_or_create(
        project=project, defaults={"organization_id": project.organization_id}
    )
    return row


@transaction.atomic
def project_settings_update(
    *,
    principal: Principal,
    project: Project,
    scheduled: bool,
    interval_hours: float | None,
    similarity_threshold: float | None,
) -> ProjectConsolidationSettings:
    if not principal.has_scope("admin") and not principal.has_scope(SCOPE_CONSOLIDATION_RUN):
        raise Forbidden("changing the consolidation schedule needs admin rights")
    if scheduled:
        feature_require(principal.organization, FEATURE_CONSOLIDATION_SCHEDULED, "scheduled consolidation")
    if interval_hours is not None and not 1 <= interval_hours <= 24 * 30:
        raise InvalidInput("interval must be between 1 hour and 30 days", field="interval_hours")
    if similarity_threshold is not None and not 0.5 <= similarity_threshold <= 0.99:
        raise InvalidInput("similarity threshold must be between 0.5 and 0.99", field="similarity_threshold")
    row = project_settings_get(project)
    row.scheduled = scheduled
    row.interval_seconds = int(interval_hours * 3600) if interval_hours else None
    row.similarity_threshold = similarity_threshold
    row.updated_at = timezone.now()
    row.save()
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="consolidation.schedule",
        target=project,
        data={"scheduled": scheduled, "interval_hours": interval_hours, "threshold": similarity_threshold},
    )
    return row


def backing_off(row: ProjectConsolidationSettings, now: Any) -> bool:
    """The project's last runs failed and its automatic runs wait (``runs.project_backoff_record``)."""
    return row.retry_after is not None and row.retry_after > now


def consolidation_schedule_due(*, now: Any = None) -> list[ConsolidationRun]:
    """Queue a scheduled run for every Teams+ project whose interval has passed, unless its runs keep
    failing and it waits out its backoff. One project's failure never stops the others."""
    if not settings.CONSOLIDATION_SCHEDULER_ENABLED:
        return []
    now = now or timezone.now()
    queued = []
    projects = Project.objects.select_related("organization").filter(
        organization__plan__in=[p for p in ("teams", "enterprise")]
    )
    for project in projects:
        try:
            row = project_settings_get(project)
            if not row.scheduled or backing_off(row, now):
                continue
            interval = row.interval_seconds or settings.CONSOLIDATION_SCHEDULER_INTERVAL
            last = (
                ConsolidationRun.objects.filter(
                    project=project, dry_run=False, status__in=["queued", "running", "completed"]
                )
                .order_by("-created_at")
                .first()
            )
            if last is not None and last.created_at > now - timedelta(seconds=interval):
                continue
            threshold = row.similarity_threshold or settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD
            run = consolidation_request(
                principal=system_principal(project.organization),
                project=project,
                options=RunOptions(similarity_threshold=threshold),
                trigger=ConsolidationRun.TRIGGER_SCHEDULED,
            )
            consolidation_enqueue(run)
            queued.append(run)
        except Exception as exc:  # one project failing never stops the scheduler
            logger.warning("Project consolidation failed project=%s error=%r", project.slug, str(exc))
    return queued


def consolidation_on_demand(*, project: Project) -> ConsolidationRun | None:
    """On demand: once a project has N new memories since its last run, consolidate it (Teams+;
    docs/consolidation.md#what-starts-a-run)."""
    if not project.organization.has_feature(FEATURE_CONSOLIDATION_SCHEDULED):
        return None
    if not project_consolidation_due(
        organization_id=project.organization_id,
        project_id=project.pk,
        threshold=settings.CONSOLIDATION_ON_DEMAND_THRESHOLD,
    ):
        return None
    try:
        run = consolidation_request(
            principal=system_principal(project.organization),
            project=project,
            options=RunOptions(similarity_threshold=settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD),
            trigger=ConsolidationRun.TRIGGER_ON_DEMAND,
        )
    except Conflict:
        return None
    consolidation_enqueue(run)
    return run
