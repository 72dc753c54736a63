"""Reads of a memory's confidence signals (the feedback, outcomes, uses and code-stability reports
behind its confidence)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.access import Principal, access_filter
from memories.models import Memory, MemorySignal


def memory_signals(principal: Principal, memory: Memory, *, limit: int = 200) -> QuerySet[MemorySignal]:
    return access_filter(MemorySignal, principal).filter(memory=memory).order_by("-created_at")[:limit]
