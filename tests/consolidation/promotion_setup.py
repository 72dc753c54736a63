"""Shared set-up of the institutional promotion tests (docs/consolidation.md#institutional-promotion):
org A on the Teams plan with two teams of two projects each, and trusted procedural lessons with chosen
similarities."""

from __future__ import annotations

from typing import Any

from accounts.access import Principal
from memories.models import Memory
from tests.consolidation.vectors import remember, spoke
from tests.factories import ProjectFactory, TeamFactory


def teams_setup(cast: Any) -> Any:
    """Org A (acme) on the Teams plan with teams platform (web-app, api) and payments (checkout, ledger);
    the teams are kept on the cast as ``cast.platform`` and ``cast.payments``."""
    org = cast.org_a
    org.plan = "teams"
    org.save(update_fields=["plan"])
    platform = TeamFactory(organization=org, slug="platform", name="Platform")
    payments = TeamFactory(organization=org, slug="payments", name="Payments")
    cast.project_a.team = platform
    cast.project_a.save(update_fields=["team"])
    ProjectFactory(organization=org, slug="api", team=platform)
    ProjectFactory(organization=org, slug="checkout", team=payments)
    ProjectFactory(organization=org, slug="ledger", team=payments)
    cast.platform, cast.payments = platform, payments
    return cast


def lesson(
    principal: Principal, project: str, axis: int, *, similarity: float = 0.9, hub: int = 0, **fields: Any
) -> Memory:
    """A trusted (0.9 unless given) procedural memory of ``project`` on ``hub``: lessons of one hub built
    with one ``similarity`` have exactly that cosine; each needs its own ``axis``."""
    fields = {"confidence": 0.9, **fields}
    return remember(
        principal,
        f"Pin the database driver version ({project} {axis})",
        spoke(hub, axis, similarity),
        content=f"Pin the database driver version in {project}: an unpinned minor upgrade broke pooling ({axis}).",
        kind=fields.pop("kind", Memory.KIND_PROCEDURAL),
        project=project,
        **fields,
    )
