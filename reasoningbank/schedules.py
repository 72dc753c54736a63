"""Every recurring background job, in one place. ``manage.py setup_schedules`` applies it
(docs/architecture.md#the-worker-and-the-schedules).

Each entry names a django-q2 task function; its apps add entries here as they gain periodic work.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    func: str
    minutes: int
    description: str


QUEUE_PROBE_SCHEDULE = "rb:queue-probe"


def schedule_specs() -> list[ScheduleSpec]:
    return [
        ScheduleSpec(
            name=QUEUE_PROBE_SCHEDULE,
            func="reasoningbank.tasks.queue_probe",
            minutes=1,
            description="the worker proves it runs tasks (read by /readyz and the dashboard banner)",
        ),
        ScheduleSpec(
            name="rb:work-sweep",
            func="consolidation.tasks.work_sweep",
            minutes=1,
            description=(
                "fail consolidation runs and requeue sessions whose worker died (stale heartbeat); queue sessions "
                "handed in while they went on once they are idle"
            ),
        ),
        ScheduleSpec(
            name="rb:signals-rollup",
            func="memories.tasks.signals_rollup_daily",
            minutes=24 * 60,
            description="fold signal events older than 30 days into aggregates; a usage-negative signal for "
            "memories shown often and never used; recompute confidence (silent memories decay); archive memories whose confidence stayed below the prune threshold",
        ),
        ScheduleSpec(
            name="rb:code-deleted-archive",
            func="memories.tasks.code_deleted_archive_daily",
            minutes=24 * 60,
            description="archive memories whose every code anchor's file was deleted longer ago than "
            "CODE_DELETED_GRACE_DAYS",
        ),
        ScheduleSpec(
            name="rb:consolidation-scheduler",
            func="consolidation.tasks.consolidation_scheduler_tick",
            minutes=5,
            description="queue scheduled consolidation for due projects (Teams plan); fail dead runs; queue again "
            "runs that waited for their organization's LLM budget",
        ),
        ScheduleSpec(
            name="rb:llm-batches-poll",
            func="consolidation.tasks.llm_batches_poll",
            minutes=2,
            description="store the answers of LLM batches that ended (batch mode); queue again the consolidation "
            "runs that waited for them",
        ),
        ScheduleSpec(
            name="rb:institutional-promotion",
            func="consolidation.tasks.promotions_institutional_daily",
            minutes=24 * 60,
            description="propose lessons that hold in several projects (teams) for team (org) scope (Teams plan)",
        ),
        ScheduleSpec(
            name="rb:audit-retention",
            func="accounts.tasks.audit_retention_daily",
            minutes=24 * 60,
            description="delete audit log rows older than the organization's plan keeps them (audit_retention_days)",
        ),
        ScheduleSpec(
            name="rb:oauth-cleartokens",
            func="accounts.tasks.oauth_tokens_clear_expired",
            minutes=60,
            description="delete expired OAuth codes and tokens (django-oauth-toolkit's cleartokens)",
        ),
        ScheduleSpec(
            name="rb:sessions-resume",
            func="memories.tasks.sessions_resume",
            minutes=5,
            description="queue sessions that were waiting for an LLM once one is configured, and those that waited "
            "for their organization's LLM budget once its period turned or its caps moved",
        ),
        ScheduleSpec(
            name="rb:webhooks-sweep",
            func="webhooks.tasks.webhooks_sweep",
            minutes=1,
            description="queue again webhook deliveries whose task was lost (a worker that died mid-attempt)",
        ),
    ]
