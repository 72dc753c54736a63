"""Every recurring background job, in one place (DESIGN §10). ``manage.py setup_schedules`` applies it.

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


def schedule_specs() -> list[ScheduleSpec]:
    return []
