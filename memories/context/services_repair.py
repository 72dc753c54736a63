"""Repair of stored summaries that break the contract every summary now keeps
(``memories/context/summary_parts.py``): rows an older import let in — decisions or superseded facts
lacking keys or of the wrong types, over-long parts, facts naming a memory that is not one of the
summary's sources. Reads skip such a row (``memories/context/selectors.py``); ``summaries_repair``
(``manage.py repair_summaries``, docs/commands.md#repairing-summaries) finds them and, unless it is a
dry run, repairs each with the repairs consolidation applies to an LLM's reply, or removes the ones
that cannot be repaired (an unknown status, a ready summary without its text). Audited per row
(``summary.repair``, ``summary.remove``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from accounts.access import access_filter
from accounts.models import Organization
from accounts.services import audit_record
from memories.context.summary_parts import SUMMARY_STATUSES, summary_parts_problems, summary_parts_repair
from memories.embedding import embed_texts, summary_embedding_text
from memories.models import Memory, MemorySummary

REPAIR_VERB = "summary.repair"
REMOVE_VERB = "summary.remove"
BATCH = 500  # summaries read at once
_COLUMNS = (
    "id", "organization_id", "memory_id", "status", "summary", "key_facts", "decisions", "superseded_facts",
    "source_memory_ids",
)  # fmt: skip


@dataclass(frozen=True)
class SummaryFinding:
    """One summary that breaks the contract: what is wrong, and what the repair does (or did)."""

    organization: str  # slug
    summary_id: str
    memory_id: str
    problems: list[str]
    action: str  # "repair" or "remove"


@dataclass
class SummariesRepairReport:
    applied: bool
    checked: int = 0
    findings: list[SummaryFinding] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for finding in self.findings if finding.action == action)


def summaries_repair(*, organization: Organization | None = None, apply: bool = False) -> SummariesRepairReport:
    """Every summary of ``organization`` (else of every organization) checked against the contract; with
    ``apply`` the ones that break it repaired or removed, one transaction per organization."""
    report = SummariesRepairReport(applied=apply)
    orgs = [organization] if organization is not None else list(Organization.objects.order_by("slug"))
    for org in orgs:
        findings = [finding for row in _rows(org, report) if (finding := _finding(org, row)) is not None]
        report.findings += findings
        if apply and findings:
            _apply(org, findings)
    return report


def _rows(org: Organization, report: SummariesRepairReport) -> Any:
    """The organization's summaries in batches by id (keyset pagination: constant memory)."""
    last = ""
    qs = access_filter(MemorySummary, org).order_by("pk").values(*_COLUMNS)
    while rows := list(qs.filter(pk__gt=last)[:BATCH]):
        report.checked += len(rows)
        yield from rows
        last = rows[-1]["id"]


def _finding(org: Organization, row: dict[str, Any]) -> SummaryFinding | None:
    problems = summary_parts_problems(row, full=True)
    if not problems:
        return None
    repaired = _repaired(row)
    action = "remove" if repaired is None else "repair"
    return SummaryFinding(org.slug, row["id"], row["memory_id"], problems, action)


def _repaired(row: dict[str, Any]) -> dict[str, Any] | None:
    """The row's parts repaired, or None when no repair makes it keep the contract."""
    if row["status"] not in SUMMARY_STATUSES:
        return None  # nobody can tell whether it was meant to be served
    parts = summary_parts_repair(
        summary=row["summary"],
        key_facts=row["key_facts"],
        decisions=row["decisions"],
        superseded_facts=row["superseded_facts"],
        source_ids=[str(source) for source in row["source_memory_ids"] or ()],
    )
    fixed = {
        **row,
        "summary": parts.summary,
        "key_facts": parts.key_facts,
        "decisions": parts.decisions,
        "superseded_facts": parts.superseded_facts,
    }
    # a ready summary without its text cannot be served: nothing to repair it from
    return None if summary_parts_problems(fixed, full=True) else fixed


@transaction.atomic
def _apply(org: Organization, findings: list[SummaryFinding]) -> None:
    rows = {
        row["id"]: row
        for row in access_filter(MemorySummary, org)
        .select_for_update()
        .filter(pk__in=[f.summary_id for f in findings])
        .values(*_COLUMNS)
    }
    for finding in findings:
        row = rows.get(finding.summary_id)
        if row is None:
            continue  # removed meanwhile (its memory was)
        fixed = _repaired(row)
        # on the consolidated memory, where its page's activity shows it (the summary may be gone)
        memory = Memory(pk=row["memory_id"])
        data = {"summary": row["id"], "problems": finding.problems, "command": "repair_summaries"}
        if fixed is None:
            access_filter(MemorySummary, org).filter(pk=row["id"]).delete()
            audit_record(organization=org, actor=None, verb=REMOVE_VERB, target=memory, data=data)
            continue
        update = {name: fixed[name] for name in ("summary", "key_facts", "decisions", "superseded_facts")}
        if row["status"] == MemorySummary.STATUS_READY and (
            (fixed["summary"], fixed["key_facts"]) != (row["summary"], row["key_facts"])
        ):
            # what it is found by changed: its vector follows
            (vector,), model = embed_texts([summary_embedding_text(fixed["summary"], fixed["key_facts"])])
            update |= {"embedding": vector, "embedding_model": model}
        access_filter(MemorySummary, org).filter(pk=row["id"]).update(**update)
        audit_record(organization=org, actor=None, verb=REPAIR_VERB, target=memory, data=data)
