"""DRF serializers for the memories REST API: strict input validation and the output shapes.

Input serializers validate types and enums so a bad request is a 400 naming the field; the
services validate again (they are also called from MCP tools and the dashboard). JSON bodies are
strict: real JSON booleans/numbers/strings only, and unknown fields are rejected so that a typo
never silently does nothing; the OpenAPI schema says so (``additionalProperties: false``, see
``StrictSerializerSchema``). Query strings of list endpoints are strict the same way
(``StrictQuerySerializer``): an empty value or an unknown parameter is a 400 naming it.

Serializer docstrings and ``help_text`` become the OpenAPI component descriptions, so they are
written for API users.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.code.anchors import PATH_MAX, SYMBOL_MAX
from memories.code.paths import path_spec_clean
from memories.code.selectors import anchor_dicts_by_memory
from memories.code.services import ANCHORS_MAX, ERROR_MAX, LINE_MAX
from memories.core.selectors import MEMORY_ORDERINGS, SEARCH_SCOPES
from memories.models import Memory, MemorySignal
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_source
from memories.validation import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    KINDS,
    RECORD_OUTCOMES,
    TAG_MAX,
    TAGS_MAX,
    TITLE_MAX,
    WRITE_SCOPES,
)
from reasoningbank.api_errors import ErrorSerializer
from reasoningbank.serializers import (
    StrictCharField,
    StrictQuerySerializer,
    StrictSerializer,
)

# "any" is every memory (active or archived); "proposed" lists the promotion proposals awaiting review
STATE_FILTERS = ("active", "archived", "any", "proposed")
TIERS = tuple(t for t, _ in Memory.TIER_CHOICES)
ORIGINS = tuple(o for o, _ in Memory.ORIGIN_CHOICES)
ARCHIVE_REASONS = tuple(r for r, _ in Memory.ARCHIVED_REASON_CHOICES)
# What each archive reason means, for API users (the OpenAPI enum ``ArchiveReasonEnum`` lists them).
ARCHIVE_REASON_CHOICES = [
    (Memory.ARCHIVED_MANUAL, "archived by hand (the default)"),
    (Memory.ARCHIVED_STALE, "no longer true or no longer useful"),
    (Memory.ARCHIVED_SUPERSEDED, "replaced by a newer or better memory"),
    (Memory.ARCHIVED_DUPLICATE, "says the same as another memory"),
    (Memory.ARCHIVED_CONSOLIDATED, "merged into a consolidated memory (set by consolidation runs)"),
    (Memory.ARCHIVED_LOW_CONFIDENCE, "confidence stayed below the prune threshold (set by the daily rollup)"),
    (Memory.ARCHIVED_CODE_DELETED, "every file it is anchored to was deleted, past the grace period (set daily)"),
]
assert {r for r, _ in ARCHIVE_REASON_CHOICES} == set(ARCHIVE_REASONS)
SESSION_ID_MAX = 200


def _tags_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=TAG_MAX, allow_blank=True), max_length=TAGS_MAX, **kwargs
    )


__all__ = ["ErrorSerializer"]  # re-exported: the views document their errors with it


# --- memories ----------------------------------------------------------------------------------


class FindingSerializer(serializers.Serializer):
    """One finding of the instruction-smell detector: the rule that fired, why, and what it read."""

    rule = serializers.CharField(help_text="the detector's rule, e.g. `override_instructions`, `remote_script`")
    reason = serializers.CharField(help_text="why the rule holds such text for review, in one sentence")
    field = serializers.CharField(help_text="the field the text is in (`title`, `description`, `content`, `tags`)")
    excerpt = serializers.CharField(help_text="the text that fired the rule (invisible characters shown as escapes)")


class MemorySerializer(serializers.Serializer):
    """A whole memory (never its embedding)."""

    id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    content = serializers.CharField()
    outcome = serializers.ChoiceField(choices=RECORD_OUTCOMES)
    tags = serializers.ListField(child=serializers.CharField())
    kind = serializers.ChoiceField(choices=KINDS)
    scope = serializers.ChoiceField(choices=WRITE_SCOPES)
    project = serializers.CharField(source="project.slug", allow_null=True, default=None, help_text="project slug")
    team = serializers.CharField(source="team.slug", allow_null=True, default=None, help_text="team slug")
    state = serializers.ChoiceField(
        choices=[s for s, _ in Memory.STATE_CHOICES],
        help_text="`quarantined`: held for an admin's review (the instruction-smell detector flagged it); "
        "`proposed`: a promotion proposal awaiting review",
    )
    flags = FindingSerializer(many=True, help_text="what the instruction-smell detector found in it (empty: nothing)")
    archived_reason = serializers.ChoiceField(
        choices=ARCHIVE_REASON_CHOICES, allow_blank=True, help_text="why it was archived; empty while active"
    )
    consolidated_into = serializers.CharField(
        source="consolidated_into_id", allow_null=True, help_text="the consolidated memory it was merged into"
    )
    tier = serializers.ChoiceField(choices=TIERS)
    retention = serializers.FloatField()
    importance = serializers.FloatField()
    confidence = serializers.FloatField()
    alpha = serializers.FloatField()
    beta = serializers.FloatField()
    usage_count = serializers.IntegerField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    impression_count = serializers.IntegerField(
        help_text="times put in an agent's context unasked (hooks, session start): moves no confidence"
    )
    last_shown_at = serializers.DateTimeField(allow_null=True)
    origin = serializers.ChoiceField(choices=ORIGINS)
    source_session = serializers.CharField(source="source_session_id", allow_null=True)
    promoted_from = serializers.ChoiceField(
        choices=KINDS,
        allow_blank=True,
        help_text="the kind consolidation's promotion ladder raised it from; empty if never",
    )
    promoted_at = serializers.DateTimeField(allow_null=True)
    promotion_reason = serializers.CharField(allow_blank=True, help_text="which ladder criterion, with its figures")
    last_signal_at = serializers.DateTimeField(allow_null=True, help_text="the last feedback, outcome or usage")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    source = serializers.SerializerMethodField(
        help_text="who wrote it, how, through which client, when; and whether it is trusted"
    )
    anchors = serializers.SerializerMethodField(help_text="where in the code it is about (docs/code-memory.md#anchors)")

    @extend_schema_field(SourceOut)
    def get_source(self, memory: Memory) -> dict[str, Any]:
        # a page of memories reads every source in one query (``sources`` in the context); one alone here
        sources = self.context.get("sources") or {}
        return sources[memory.id] if memory.id in sources else memory_source(memory)

    # the component memory_get's answer (``MemoryOut``) declares
    @extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/AnchorOut"}})
    def get_anchors(self, memory: Memory) -> list[dict[str, Any]]:
        # a page of memories reads every anchor in one query (``anchors`` in the context); one memory's here
        anchors = self.context.get("anchors") or {}
        return anchors[memory.id] if memory.id in anchors else anchor_dicts_by_memory([memory])[memory.id]


class QuarantineNoteSerializer(serializers.Serializer):
    """Why a memory was held for review, and what happens next."""

    rules = FindingSerializer(many=True, help_text="what the detector found")
    message = serializers.CharField(help_text="what happens next")


class MemoryUpdatedSerializer(MemorySerializer):
    """The memory as edited; an edit the instruction-smell detector flags puts it in quarantine."""

    quarantine = QuarantineNoteSerializer(
        allow_null=True, help_text="when the edit put the memory in quarantine: what fired and what happens next"
    )


class MemoryListQuerySerializer(StrictQuerySerializer):
    # query parameters of GET /memories (strings from the URL, so DRF's usual string-parsing fields)

    project = serializers.SlugField(required=False, help_text="project slug")
    scope = serializers.ChoiceField(choices=SEARCH_SCOPES, required=False, default="all")
    state = serializers.ChoiceField(choices=STATE_FILTERS, required=False, default="active")
    outcome = serializers.ChoiceField(choices=RECORD_OUTCOMES, required=False)
    kind = serializers.ChoiceField(choices=KINDS, required=False)
    tier = serializers.ChoiceField(choices=TIERS, required=False)
    origin = serializers.ChoiceField(choices=ORIGINS, required=False)
    tag = serializers.ListField(
        child=serializers.CharField(max_length=TAG_MAX), required=False, help_text="repeatable; all must match"
    )
    min_confidence = serializers.FloatField(required=False, min_value=0, max_value=1)
    max_confidence = serializers.FloatField(required=False, min_value=0, max_value=1)
    q = serializers.CharField(required=False, max_length=200, help_text="substring of title or description")
    ordering = serializers.ChoiceField(choices=MEMORY_ORDERINGS, required=False, default="-created_at")
    path = serializers.CharField(
        required=False,
        max_length=PATH_MAX,
        help_text=(
            "only memories anchored to this repository-relative file (`src/app.py`), or with a trailing slash "
            "to anything under this directory (`src/api/`)"
        ),
    )
    symbol = serializers.CharField(
        required=False,
        max_length=SYMBOL_MAX,
        help_text=(
            "only memories anchored to this function or class (dotted, `Parser.parse`) or one of its members "
            "(`Parser` finds `Parser.parse`); with `path`, on that path"
        ),
    )

    def validate_path(self, value: str) -> str:
        try:
            return path_spec_clean(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None


class AnchorInSerializer(StrictSerializer):
    """A place in the code the memory is about (a path, optionally a symbol and lines), or an error."""

    repository = StrictCharField(
        max_length=600, required=False, allow_null=True, help_text="the git remote, any spelling"
    )
    path = StrictCharField(
        max_length=1000, required=False, allow_null=True, help_text="relative to the repository's top"
    )
    symbol = StrictCharField(max_length=300, required=False, allow_null=True, help_text="a function or class, dotted")
    line_start = serializers.IntegerField(min_value=1, max_value=LINE_MAX, required=False, allow_null=True)
    line_end = serializers.IntegerField(min_value=1, max_value=LINE_MAX, required=False, allow_null=True)
    commit = StrictCharField(max_length=64, required=False, allow_null=True, help_text="the commit it was true at")
    error = StrictCharField(
        max_length=ERROR_MAX, required=False, allow_null=True,
        help_text="a failing command's output, or its error line: only its signature is kept",
    )


class MemoryUpdateSerializer(StrictSerializer):
    title = StrictCharField(max_length=TITLE_MAX, required=False)
    description = StrictCharField(max_length=DESCRIPTION_MAX, required=False)
    content = StrictCharField(max_length=CONTENT_MAX, required=False)
    outcome = serializers.ChoiceField(choices=RECORD_OUTCOMES, required=False)
    tags = _tags_field(required=False)
    kind = serializers.ChoiceField(choices=KINDS, required=False)
    anchors = serializers.ListField(
        child=AnchorInSerializer(),
        max_length=ANCHORS_MAX,
        required=False,
        help_text="replace its anchors ([] removes them)",
    )


class MemoryArchiveSerializer(StrictSerializer):
    reason = serializers.ChoiceField(
        choices=ARCHIVE_REASON_CHOICES,
        required=False,
        default=Memory.ARCHIVED_MANUAL,
        help_text="why the memory is archived (default manual)",
    )


# --- signals -----------------------------------------------------------------------------------


class SignalSerializer(serializers.ModelSerializer):
    """One confidence signal: feedback, an outcome report, a use by a search or a code-stability report."""

    class Meta:
        model = MemorySignal
        fields = ["type", "positive", "comment", "session_id", "actor", "confidence_after", "created_at"]


# --- lineage -----------------------------------------------------------------------------------


class LineageMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    state = serializers.CharField()
    archived_reason = serializers.CharField(allow_blank=True)
    confidence = serializers.FloatField()


class LineageSubjectSerializer(LineageMemorySerializer):
    scope = serializers.CharField()
    origin = serializers.CharField()


class LinkSerializer(serializers.Serializer):
    """A link to or from another memory (`memory` is the other end)."""

    kind = serializers.CharField(help_text="consolidates, supersedes, contradicts, duplicates or references")
    weight = serializers.FloatField()
    reason = serializers.CharField(allow_blank=True)
    # run ids are strings (``run_…``), not integers: an IntegerField here made every lineage with a
    # link written by a real consolidation run a 500
    run_id = serializers.CharField(allow_null=True, help_text="the consolidation run that made the link, if any")
    created_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    memory = LineageMemorySerializer()


class LineageSerializer(serializers.Serializer):
    """A memory's links both ways and its consolidation history."""

    memory = LineageSubjectSerializer()
    outgoing = LinkSerializer(many=True)
    incoming = LinkSerializer(many=True)
    consolidated_into = serializers.CharField(allow_null=True)
    sources = serializers.ListField(child=serializers.CharField())
