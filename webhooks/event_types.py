"""The events a webhook can subscribe to, with the sentence the API, the dashboard and
docs/webhooks.md show for each. Plain Python: the names are the public contract."""

from __future__ import annotations

__pure__ = True

EVENT_TYPES: dict[str, str] = {
    "memory.created": (
        "a memory was recorded, distilled from a session or written by consolidation, or approved out of the "
        "quarantine it was stored in"
    ),
    "memory.quarantined": (
        "a memory was stored in quarantine, or an edit or a restore put one there, for an admin's review: its id, the detector's rules and who wrote it, "
        "never its text"
    ),
    "memory.merged": "memories were merged into another (consolidated or duplicate) and archived",
    "memory.superseded": "memories were superseded by another (a newer one, or a moderator's decision) and archived",
    "contradiction.found": "a consolidation run's judge found memories that contradict each other",
    "dispute.opened": "two memories were set aside as a dispute for a moderator to decide",
    "dispute.resolved": "a moderator resolved a dispute",
    "promotion.proposed": "a memory was proposed for team or organization scope",
    "consolidation.run_finished": "a consolidation run finished (completed or skipped)",
    "consolidation.run_failed": "a consolidation run failed",
    "session.distilled": (
        "a submitted session was distilled into memories (once per round: a session handed in again after its "
        "distillation is distilled again, for its new turns)"
    ),
    "session.failed": "a submitted session could not be distilled",
    "llm.budget_alert": "the organization's LLM spend reached its alert threshold of a daily or monthly cap",
    "security.token_suspended": (
        "a token's or a connected app's write rights were suspended after a burst of writes the instruction-smell "
        "detector flagged; an admin lifts it"
    ),
    "audit.event": (
        "a row was written to the organization's audit log (a sign-in, a role change, a token, a webhook, an "
        "export, …): one event per row, for a SIEM"
    ),
}


def event_types_unknown(names: list[str]) -> list[str]:
    """The names that are not events, in the order given."""
    return [name for name in names if name not in EVENT_TYPES]
