"""Input rules shared by the consolidation features: a moderator's note on a review item (the review
queue and promotion decisions), LLM-made tags, and the plan gate of a consolidation feature.

A leaf: the run (``consolidation.runs``), the review queue (``consolidation.review``) and institutional
promotion (``consolidation.promotion``) all build on it and it imports none of them, so deciding a
promotion from the review queue needs no import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accounts.models import Organization
from accounts.plans.catalogue import plan_required
from memories.writes import text_scrub
from reasoningbank.errors import InvalidInput

NOTE_MAX = 2000  # characters of a review note, and of the reason a review item keeps


def review_note_clean(note: Any) -> str:
    """A moderator's note: a string of at most ``NOTE_MAX`` characters without NUL, secrets scrubbed."""
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise InvalidInput("note must be a string", field="note")
    note = note.strip()
    if len(note) > NOTE_MAX:
        raise InvalidInput(f"note is too long ({len(note)} characters; at most {NOTE_MAX})", field="note")
    if "\x00" in note:
        raise InvalidInput("note must not contain NUL characters", field="note")
    # kept as the decision's reason, the dispute's link reason and in the audit row: shown to the org
    return text_scrub(note, seen_in="review.note")


def tags_lenient(tags: Iterable[str]) -> list[str]:
    """LLM-made tags: lower-cased, de-duplicated, over-long ones dropped, at most 20 (never raises)."""
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip().lower().replace("\x00", "")
        if tag and len(tag) <= 50 and tag not in cleaned:
            cleaned.append(tag)
    return cleaned[:20]


def feature_require(org: Organization, feature: str, what: str) -> None:
    """``PlanRequired`` (a 403 naming the plan needed and where to change it) unless ``org``'s plan has ``feature``."""
    if not org.has_feature(feature):
        raise plan_required(org, feature, what)
