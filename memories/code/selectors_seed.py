"""How far a repository's seeding got (docs/code-memory.md#seeding-from-history): the newest commit read,
and its batches by distillation status — what the command and ``GET /api/v1/code/history`` report."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count

from accounts.access import Principal
from memories.code.history_trace import repository_of
from memories.core.selectors import project_target
from memories.models import AgentSession, HistorySeed, Memory, SeededCommit
from reasoningbank.errors import NotFound


@dataclass
class SeedProgress:
    seed: HistorySeed
    statuses: dict[str, int] = field(default_factory=dict)  # batches (sessions) by distillation status
    distilled_memories: int = 0

    @property
    def batches_distilled(self) -> int:
        return sum(self.statuses.get(s, 0) for s in (AgentSession.STATUS_DONE, AgentSession.STATUS_HELD))


def history_seed_get(principal: Principal, *, project: str | None, repository: str) -> HistorySeed | None:
    """The seeding of ``repository`` into the project the token names (or reaches alone), if one began."""
    remote = repository_of(repository)
    if not remote:  # nothing was ever seeded from what is not a remote
        raise NotFound(f"no history of {repository.strip()[:300]!r} was seeded: it is not a git remote")
    target = project_target(principal, project)
    return HistorySeed.objects.filter(organization=principal.organization, project=target, repository=remote).first()


def history_seed_progress(principal: Principal, *, project: str | None, repository: str) -> SeedProgress:
    """The seeding's state; a repository never seeded into the project is a 404 naming it."""
    seed = history_seed_get(principal, project=project, repository=repository)
    if seed is None:
        raise NotFound(f"no history of {repository.strip()[:300]} was seeded into this project")
    sessions = AgentSession.objects.filter(
        organization=principal.organization,
        pk__in=SeededCommit.objects.filter(seed=seed, session__isnull=False).values("session_id"),
    )
    statuses = dict(sessions.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    distilled = Memory.objects.filter(organization=principal.organization, source_session__in=sessions).count()
    return SeedProgress(seed=seed, statuses=statuses, distilled_memories=distilled)
