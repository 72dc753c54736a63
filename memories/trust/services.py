"""The screening of every text that becomes a memory or a summary (docs/security/memory-poisoning.md#quarantine).

``drafts_screen`` is the one place the instruction-smell detector runs for the bank: ``memories_create``
(record, distillation, synthesis, patterns, the ladder, promotion), ``memory_update``, ``summary_store``
and the import writer call it, so no way in skips it and each applies the organization's policy the same
way — its exceptions (what admins approved), its ``trusted_hosts`` (install scripts it allows), and
``poisoning_policy``:

* ``off``: nothing is screened;
* ``flag``: a flagged text is stored active, its findings in ``flags`` (shown wherever it is shown);
* ``quarantine`` (the default): a flagged text is stored ``quarantined`` (a summary ``held``), never
  searched, injected, consolidated or exported as active until an admin approves it.

Each flagged write is reported to the write limits (``flagged_writes_note``): a burst of them from one
token suspends its writes (docs/security/memory-poisoning.md, the write limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from accounts.access import Principal
from accounts.models import Organization
from accounts.services import audit_record, flagged_write_note
from memories.models import DetectorException, Memory
from memories.trust.screening import memory_texts, rules_named, span_fingerprint, texts_findings


class Screenable(Protocol):
    """A memory's text as every write path has it (``MemoryDraft``, a ``Memory``): read only."""

    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...


@dataclass(frozen=True)
class Screening:
    """The detector's verdict on one text under the organization's policy: the findings (``flags``, after
    the organization's exceptions) and whether the text is held (``quarantined``)."""

    policy: str
    flags: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    @property
    def quarantined(self) -> bool:
        return self.flagged and self.policy == Organization.POISONING_QUARANTINE


def texts_screen(org: Organization, texts: Sequence[Mapping[str, str]]) -> list[Screening]:
    """One ``Screening`` per text (a mapping of field name to text), in order."""
    policy = org.poisoning_policy
    if policy == Organization.POISONING_OFF:
        return [Screening(policy) for _ in texts]
    hosts = tuple(org.trusted_hosts or ())
    found = [texts_findings(text, allowed_hosts=hosts) for text in texts]
    fingerprints = {finding["fingerprint"] for findings in found for finding in findings}
    excepted: set[tuple[str, str]] = set()
    if fingerprints:  # one query, and only when something fired (nearly never)
        excepted = set(
            DetectorException.objects.filter(organization=org, fingerprint__in=fingerprints).values_list(
                "rule", "fingerprint"
            )
        )
    return [
        Screening(policy, [f for f in findings if (f["rule"], f["fingerprint"]) not in excepted]) for findings in found
    ]


def drafts_screen(org: Organization, drafts: Sequence[Screenable]) -> list[Screening]:
    """One ``Screening`` per memory draft, in order (the fields read together: title, description,
    content, tags)."""
    return texts_screen(
        org,
        [memory_texts(title=d.title, description=d.description, content=d.content, tags=d.tags) for d in drafts],
    )


def flagged_writes_note(principal: Principal | None, screenings: Sequence[Screening]) -> None:
    """Tell the write limits about each flagged write of ``principal`` (background work acting for
    nobody in particular passes None: nothing to count)."""
    if principal is None:
        return
    for screening in screenings:
        if screening.flagged:
            flagged_write_note(principal)


def memories_flagged_audit(principal: Principal, memories: Sequence[Memory]) -> None:
    """One audit row per memory the detector flagged: ``memory.quarantine`` (held for review) or
    ``memory.flag`` (stored active with its flags), naming the rules and how it was written."""
    for memory in memories:
        if not memory.flags:
            continue
        audit_record(
            organization=principal.organization,
            actor=principal,
            verb="memory.quarantine" if memory.state == Memory.STATE_QUARANTINED else "memory.flag",
            target=memory,
            data={
                "rules": rules_named(memory.flags),
                "origin": memory.origin,
                "title": memory.title[:200],
                **({"session": memory.source_session_id} if memory.source_session_id else {}),
            },
        )


def exceptions_learn(
    *, organization: Organization, flags: Sequence[Mapping[str, Any]], texts: Mapping[str, str], memory_id: str,
    user: Any,
) -> int:  # fmt: skip
    """An admin approved a text with these findings: record one ``DetectorException`` per finding (the
    rule and the fingerprint of the span, recomputed from the text as it stands), so the same text is
    not flagged again in this organization. Returns how many were new."""
    created = 0
    for finding in flags:
        rule = str(finding.get("rule", ""))
        text = texts.get(str(finding.get("field", "")), "")
        start, end = finding.get("start"), finding.get("end")
        if not rule or not isinstance(start, int) or not isinstance(end, int) or not 0 <= start < end <= len(text):
            continue  # a finding read from an import file whose span does not fit: nothing to learn
        _, made = DetectorException.objects.get_or_create(
            organization=organization,
            rule=rule[:60],
            fingerprint=span_fingerprint(text[start:end]),
            defaults={"excerpt": str(finding.get("excerpt", ""))[:300], "memory_id": memory_id, "created_by": user},
        )
        created += made
    return created


HELD_KEYS = ("rule", "reason", "field", "start", "end", "excerpt")


def session_held(memories: Sequence[Memory]) -> list[dict[str, Any]]:
    """The findings that hold a session for review: those of its distilled memories the detector put in
    quarantine, each naming its memory (the session's ``held``). A memory only flagged (the ``flag``
    policy) carries its own ``flags`` and holds nothing."""
    return [
        {"memory": memory.id, "title": memory.title[:200], **{key: finding.get(key) for key in HELD_KEYS}}
        for memory in memories
        if memory.state == Memory.STATE_QUARANTINED
        for finding in memory.flags
    ]
