"""Institutional promotion across scopes (docs/consolidation.md#institutional-promotion).

One pass per organization (``promotions_propose``; the daily job, ``manage.py promote_institutional``,
``POST /api/v1/consolidation/promotions`` and the review queue's button all call it):

1. team scope: for each team, the trusted procedural memories of its projects are grouped by similarity
   (``consolidation.promotion``); a group that holds in at least ``PROMOTION_MIN_PROJECTS`` of the
   team's projects is proposed for the team;
2. org scope: the same over the whole org, places being teams (a project in no team counts as its own
   place, so an org without teams still learns across projects); team-scope memories count for their
   team, so a lesson promoted in two teams is proposed for the org.

A proposal is a consolidated memory at the target scope (the most trusted member's text, the
members' centroid as its embedding, the weighted confidence with the consensus bonus) linked
``consolidates`` to every source, and a ``promotion`` ``ReviewItem``. It is ``proposed`` (tier
``archived``), neither served nor counted nor restorable like an archived memory, until a moderator
accepts it (it becomes active; the sources stay active and keep serving their projects; the lineage
stays) or rejects it (it is archived, nothing is promoted). With the organization's
``auto_promote_institutional`` on, it is accepted at once, audited as automatic.

It is a per-organization job, not a phase of a project's consolidation run: a project run sees one
project's memories, and promotion is about what several projects agree on.

Idempotent: a source set is proposed once (``ReviewItem.source_key``, unique per org), whatever became
of it; a group sharing a source with a pending or accepted proposal for the same place, or close to a
memory already active at that place, is not proposed either.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_WRITE, Organization, Project, Team
from accounts.plans.catalogue import FEATURE_INSTITUTIONAL_PROMOTION
from accounts.services import audit_record
from consolidation.models import ReviewItem
from consolidation.promotion import rules
from consolidation.promotion.reports import PromotionReport, ProposalReport
from consolidation.promotion.selectors import (
    ORG_TARGET,
    CandidateRow,
    promotion_candidates,
    promotion_scope_memories,
    promotion_source_keys,
    promotion_taken_sources,
    team_target,
)
from consolidation.validation import NOTE_MAX, feature_require, review_note_clean, tags_lenient
from memories.models import Memory, MemoryLink
from memories.reads import memory_is_writable
from memories.writes import (
    HOW_PROMOTED,
    MemoryDraft,
    ProvenanceInput,
    drafts_screen,
    memories_create,
    memory_limit_check,
)
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, ServiceError

logger = logging.getLogger("consolidation")

PROMOTION_DECISIONS = ("accept", "reject")
AUTOMATIC = "automatic"
def promotion_criteria() -> rules.PromotionCriteria:
    return rules.PromotionCriteria(
        similarity=float(settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD),
        min_places=int(settings.PROMOTION_MIN_PROJECTS),
        min_confidence=float(settings.PROMOTION_MIN_CONFIDENCE),
    )


# --- the pass --------------------------------------------------------------------------------------------


def promotions_propose(*, principal: Principal, dry_run: bool = False, trigger: str = "manual") -> PromotionReport:
    """Look for lessons that hold across projects (teams) of the principal's organization and propose
    them one scope up. Org admins only (the ``admin`` scope, a token not restricted to some projects);
    Teams plan and above (``PlanRequired`` otherwise)."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"institutional promotion needs the '{SCOPE_ADMIN}' scope (organization admins)")
    if principal.is_restricted:
        raise Forbidden(
            "institutional promotion looks at every project of the organization: use a token that is not "
            "restricted to some projects or teams"
        )
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false", field="dry_run")
    org = principal.organization
    feature_require(org, FEATURE_INSTITUTIONAL_PROMOTION, "institutional promotion")
    criteria = promotion_criteria()
    report = PromotionReport(dry_run=dry_run)
    state = _PassState.load(org, criteria)
    # the switch as it is now, not as it was when the caller's principal was built
    state.auto_promote = access_filter(Organization, org).values_list("auto_promote_institutional", flat=True).get()
    report.candidates = len(state.rows)
    teams = {team.id: team for team in access_filter(Team, org)}
    projects = {p.id: p for p in access_filter(Project, org)}

    # 1. team scope: the projects of each team
    by_team: dict[int, list[rules.Candidate]] = defaultdict(list)
    for row in state.rows:
        if row.project_id is not None and row.team_id is not None:
            by_team[row.team_id].append(_candidate(row, place=str(row.project_id)))
    for team_id in sorted(by_team):
        for group in rules.promotion_groups(by_team[team_id], criteria):
            _propose(
                principal, state, report, group, target=team_target(team_id), team=teams[team_id], trigger=trigger,
                places=[projects[int(p)].slug for p in group.places],
            )  # fmt: skip

    # 2. org scope: teams (and projects in no team) of the org; proposals accepted above now count
    if not dry_run and report.accepted:
        state = _PassState.load(org, criteria, auto_promote=state.auto_promote)
    places: dict[str, str] = {}
    candidates = []
    for row in state.rows:
        if row.team_id is not None:
            place, label = f"team:{row.team_id}", teams[row.team_id].slug
        else:
            assert row.project_id is not None  # org-scope memories are not candidates
            place, label = f"project:{row.project_id}", f"{projects[row.project_id].slug} (no team)"
        places[place] = label
        candidates.append(_candidate(row, place=place))
    for group in rules.promotion_groups(candidates, criteria):
        _propose(
            principal, state, report, group, target=ORG_TARGET, team=None, trigger=trigger,
            places=[places[p] for p in group.places],
        )  # fmt: skip
    logger.info(
        "institutional promotion for %s (%s%s): %d candidates, %d proposed, %d accepted, skipped %s",
        org.slug, trigger, ", dry run" if dry_run else "", report.candidates, len(report.proposed), report.accepted,
        report.skipped or "none",
    )  # fmt: skip
    return report


@dataclass
class _PassState:
    rows: list[CandidateRow]
    by_id: dict[str, CandidateRow]
    keys: set[str]
    taken: dict[str, set[str]]
    known: dict[str, list[Any]]
    criteria: rules.PromotionCriteria
    auto_promote: bool = False

    @classmethod
    def load(cls, org: Organization, criteria: rules.PromotionCriteria, *, auto_promote: bool = False) -> _PassState:
        rows = promotion_candidates(org, min_confidence=criteria.min_confidence)
        return cls(
            rows=rows,
            by_id={row.id: row for row in rows},
            keys=promotion_source_keys(org),
            taken=promotion_taken_sources(org),
            known=promotion_scope_memories(org),
            criteria=criteria,
            auto_promote=auto_promote,
        )


def _candidate(row: CandidateRow, *, place: str) -> rules.Candidate:
    return rules.Candidate(
        id=row.id, place=place, confidence=row.confidence, usage_count=row.usage_count, vector=row.embedding
    )


def _skip(report: PromotionReport, reason: str) -> None:
    report.skipped[reason] = report.skipped.get(reason, 0) + 1


def _propose(
    principal: Principal,
    state: _PassState,
    report: PromotionReport,
    group: rules.PromotionGroup,
    *,
    target: str,
    team: Team | None,
    places: list[str],
    trigger: str,
) -> None:
    places = sorted(places)
    key = rules.source_set_key(group.member_ids)
    if key in state.keys:
        _skip(report, "already_proposed")
        return
    if state.taken.get(target, set()) & set(group.member_ids):
        _skip(report, "overlaps_a_proposal")
        return
    vectors = [state.by_id[mid].embedding for mid in group.member_ids]
    centroid = rules.promotion_centroid(vectors)
    if rules.promotion_known(centroid, state.known.get(target, []), state.criteria.similarity):
        _skip(report, "known_at_scope")
        return
    sources = list(
        Memory.objects.filter(organization=principal.organization, pk__in=group.member_ids)
        .select_related("project", "team")
        .defer("embedding", "search_vector")
        .order_by("id")
    )
    members = [_candidate(state.by_id[m.id], place="") for m in sources]
    confidence = rules.promotion_confidence(
        [(m.confidence, m.usage_count) for m in sources], consensus_threshold=state.criteria.min_places
    )
    representative = next(m for m in sources if m.id == rules.promotion_representative(members).id)
    proposal = ProposalReport(
        scope=Memory.SCOPE_TEAM if team is not None else Memory.SCOPE_ORG,
        team=team.slug if team is not None else None,
        title=representative.title,
        places=places,
        sources=[
            {
                "id": m.id,
                "title": m.title,
                "project": m.project.slug if m.project else None,
                "team": m.team.slug if m.team else None,
                "confidence": round(m.confidence, 4),
                "usage_count": m.usage_count,
            }
            for m in sources
        ],
        confidence=round(confidence.final, 4),
        weighted=round(confidence.weighted, 4),
        bonus=round(confidence.bonus, 4),
        similarity=round(group.average_similarity, 4),
    )
    if report.dry_run:
        report.proposed.append(proposal)
        state.keys.add(key)
        return
    draft = MemoryDraft(
        title=representative.title,
        description=(
            f"Holds in {_holds(places, team)}: promoted from {len(sources)} similar memories, each "
            f"trusted at {state.criteria.min_confidence:g} or more."
        )[:2000],
        content=representative.content,
        outcome=representative.outcome,
        tags=tags_lenient([tag for m in [representative, *sources] for tag in m.tags]),
        kind=Memory.KIND_PROCEDURAL,
    )
    (screening,) = drafts_screen(principal.organization, [draft])
    if screening.quarantined:
        # the text would be held for review: spreading it to a team or the organization is not proposed
        # (its sources stay where they are; docs/security/memory-poisoning.md#quarantine)
        _skip(report, "flagged_by_detector")
        return
    try:
        with transaction.atomic():
            item = _proposal_create(principal, draft, sources, group, key, team, confidence, centroid, places, trigger)
    except IntegrityError:  # another pass proposed the same set meanwhile
        _skip(report, "already_proposed")
        return
    state.keys.add(key)
    state.taken.setdefault(target, set()).update(group.member_ids)
    proposal.review_id, proposal.memory_id, proposal.status = item.pk, item.first_id, item.status
    if state.auto_promote:
        try:
            item = promotion_decide(principal=principal, item=item, decision="accept", automatic=True)
        except ServiceError as exc:  # e.g. the plan's memory limit: it waits in the review queue instead
            logger.warning("automatic promotion of %s left pending: %s", item.first_id, exc.message)
        else:
            proposal.status = item.status
            state.known.setdefault(target, []).append(centroid)
    report.proposed.append(proposal)


def _holds(places: list[str], team: Team | None) -> str:
    """Where a lesson holds, in words: "2 projects of team Platform (api, web-app)", "2 teams (…)"."""
    listed = ", ".join(places)
    if team is not None:
        return f"{len(places)} projects of team {team.name} ({listed})"
    if all(not p.endswith("(no team)") for p in places):
        return f"{len(places)} teams ({listed})"
    return f"{len(places)} teams and projects in no team ({listed})"


def _proposal_create(
    principal: Principal,
    draft: MemoryDraft,
    sources: Sequence[Memory],
    group: rules.PromotionGroup,
    key: str,
    team: Team | None,
    confidence: Any,
    centroid: list[float],
    places: list[str],
    trigger: str,
) -> ReviewItem:
    org = principal.organization
    (memory,) = memories_create(
        principal=principal,
        drafts=[draft],
        project=None,
        team=team,
        origin=Memory.ORIGIN_CONSOLIDATED,
        initial_confidence=min(0.99, max(0.01, confidence.final)),
        vectors=[centroid],
        provenance=ProvenanceInput(how=HOW_PROMOTED, sources=sources),
    )
    # proposed, not yet promoted, until a moderator decides it. The tier "archived" too: no tier-based
    # read (every retrieval mode but exhaustive, which filters the state) can ever reach it
    memory.state, memory.tier = Memory.STATE_PROPOSED, "archived"
    memory.save(update_fields=["state", "tier"])
    reason = f"promoted: holds in {_holds(places, team)}"
    MemoryLink.objects.bulk_create(
        [
            MemoryLink(
                organization=org, source=memory, target=source, kind=MemoryLink.KIND_CONSOLIDATES,
                weight=round(group.average_similarity, 4), reason=reason[:2000],
            )
            for source in sources
        ]
    )  # fmt: skip
    item = ReviewItem.objects.create(
        organization=org,
        kind=ReviewItem.KIND_PROMOTION,
        first=memory,
        source_key=key,
        similarity=group.average_similarity,
        reason=(
            f"it holds in {_holds(places, team)} with confidence "
            f"{confidence.final:.2f} (weighted {confidence.weighted:.2f} + consensus {confidence.bonus:.2f})"
        )[:NOTE_MAX],
    )
    audit_record(
        organization=org,
        actor=principal,
        verb="promotion.propose",
        target=memory,
        data={
            "review": item.pk,
            "scope": Memory.SCOPE_TEAM if team is not None else Memory.SCOPE_ORG,
            "team": team.slug if team is not None else None,
            "places": places,
            "sources": [s.id for s in sources],
            "similarity": round(group.average_similarity, 4),
            "confidence": {"weighted": confidence.weighted, "bonus": confidence.bonus, "final": confidence.final},
            "trigger": trigger,
        },
    )
    return item


# --- deciding a proposal ---------------------------------------------------------------------------------

DEFAULT_REASONS = {
    "accept": "a moderator promoted it",
    "reject": "a moderator decided not to promote it",
}


@transaction.atomic
def promotion_decide(
    *, principal: Principal, item: ReviewItem, decision: Any, note: Any = "", automatic: bool = False
) -> ReviewItem:
    """Accept (the proposed memory becomes active at its team or org scope; the sources stay active and
    linked) or reject (it is archived, nothing is promoted, the same sources are not proposed again)
    a pending promotion. ``item`` comes from ``consolidation.review.selectors.review_get``; audited, ``automatic``
    when the organization accepts proposals at once."""
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"deciding reviews needs the '{SCOPE_MEMORIES_WRITE}' scope (viewers are read-only)")
    if decision not in PROMOTION_DECISIONS:
        raise InvalidInput(
            f"decision must be one of {', '.join(PROMOTION_DECISIONS)} for a promotion (got {decision!r})",
            field="decision",
        )
    note = review_note_clean(note)
    item = (
        ReviewItem.objects.select_for_update(of=("self", "first"))
        .select_related("first", "first__team")
        .get(pk=item.pk)
    )
    if item.kind != ReviewItem.KIND_PROMOTION:
        raise InvalidInput("this review item is not a promotion", field="review_id")
    memory = item.first
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change memories at that scope")
    if item.status != ReviewItem.STATUS_PENDING:
        raise Conflict(
            f"this promotion was already decided: {item.get_status_display().lower()}"
            f"{f' by {item.decided_by}' if item.decided_by else ''}",
            field="review_id",
        )
    now = timezone.now()
    if decision == "accept":
        if memory.state != Memory.STATE_ACTIVE:
            memory_limit_check(principal.organization, adding=1)
            memory.state, memory.archived_reason, memory.archived_at, memory.tier = Memory.STATE_ACTIVE, "", None, "hot"
            memory.updated_at = now
            memory.save(update_fields=["state", "archived_reason", "archived_at", "tier", "updated_at"])
        item.status = ReviewItem.STATUS_ACCEPTED
    else:
        if memory.state == Memory.STATE_ACTIVE or memory.archived_reason != Memory.ARCHIVED_MANUAL:
            memory.state, memory.archived_reason, memory.tier = (
                Memory.STATE_ARCHIVED,
                Memory.ARCHIVED_MANUAL,
                "archived",
            )
            memory.archived_at, memory.updated_at = memory.archived_at or now, now
            memory.save(update_fields=["state", "archived_reason", "archived_at", "tier", "updated_at"])
        item.status = ReviewItem.STATUS_REJECTED
    reason = note or ("the organization accepts promotions automatically" if automatic else DEFAULT_REASONS[decision])
    item.reason, item.decided_at = reason[:NOTE_MAX], now
    item.decided_by = AUTOMATIC if automatic else principal.actor_label[:200]
    item.save(update_fields=["status", "reason", "decided_by", "decided_at"])
    sources = list(
        MemoryLink.objects.filter(
            organization=principal.organization, source=memory, kind=MemoryLink.KIND_CONSOLIDATES
        ).values_list("target_id", flat=True)
    )
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb=f"promotion.{decision}",
        target=memory,
        data={
            "review": item.pk,
            "automatic": automatic,
            "scope": memory.scope,
            "team": memory.team.slug if memory.team else None,
            "sources": sorted(sources),
            "note": note,
        },
    )
    return item
