"""What one institutional promotion pass found (``consolidation.promotion.services.promotions_propose``)
and its text for ``manage.py promote_institutional``. Pure: no Django, so the report's wording is
tested without a database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

ACCEPTED = "accepted"  # a proposal the organization accepted at once (the review item's status)
SKIP_REASONS = {
    "already_proposed": "this set of sources was proposed before (pending, promoted or rejected)",
    "overlaps_a_proposal": "a source is already in a pending or accepted proposal for the same place",
    "known_at_scope": "an active memory at that scope already says it",
    "flagged_by_detector": "the instruction-smell detector flags its text: it would wait in quarantine",
}


@dataclass
class ProposalReport:
    """One proposal (or, in a dry run, what would be proposed)."""

    scope: str  # "team" or "org"
    team: str | None  # the target team's slug (team scope)
    title: str
    places: list[str]  # the project slugs (team scope) or team / project slugs (org scope) it holds in
    sources: list[dict[str, Any]]  # {id, title, project, team, confidence, usage_count}
    confidence: float
    weighted: float
    bonus: float
    similarity: float
    status: str = "would_propose"  # "pending", "accepted", or "would_propose" in a dry run
    review_id: int | None = None
    memory_id: str | None = None


@dataclass
class PromotionReport:
    dry_run: bool
    candidates: int = 0  # trusted procedural memories looked at
    proposed: list[ProposalReport] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> int:
        return sum(1 for p in self.proposed if p.status == ACCEPTED)


def report_text(report: PromotionReport) -> str:
    """One line per proposal, one per skip reason, then the totals."""
    lines = []
    for p in report.proposed:
        where = f"team {p.team}" if p.team else "the organization"
        status = {"would_propose": "would propose", "pending": "proposed", "accepted": "promoted"}[p.status]
        ref = f" (review {p.review_id}, memory {p.memory_id})" if p.review_id else ""
        lines.append(
            f"{status} for {where}: {p.title!r}{ref} — holds in {', '.join(p.places)}; "
            f"confidence {p.confidence:.3f} (weighted {p.weighted:.3f} + consensus {p.bonus:.3f}); "
            f"{len(p.sources)} sources: {', '.join(s['id'] for s in p.sources)}"
        )
    for reason, count in sorted(report.skipped.items()):
        lines.append(f"skipped {count}: {SKIP_REASONS.get(reason, reason)}")
    verb = "would propose" if report.dry_run else "proposed"
    lines.append(
        f"{report.candidates} trusted procedural memories looked at; {verb} {len(report.proposed)}"
        + ("" if report.dry_run else f", {report.accepted} accepted automatically")
    )
    return "\n".join(lines)
