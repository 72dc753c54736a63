"""Reads for moderators: the contradictions consolidation set aside for a person to decide."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from memories.models import Memory, MemoryLink


def disputed_list(principal: Principal, *, include_resolved: bool = False) -> QuerySet[MemoryLink]:
    """Contradiction pairs for moderators (both memories stay active until someone decides)."""
    qs = access_filter(MemoryLink, principal).filter(kind=MemoryLink.KIND_CONTRADICTS)
    readable = access_filter(Memory, principal).filter(project__in=reachable_projects(principal))
    qs = qs.filter(source__in=readable, target__in=readable)
    if not include_resolved:
        qs = qs.filter(resolved_at__isnull=True)
    return qs.select_related("source", "target", "source__project").order_by("-created_at")
