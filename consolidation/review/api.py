"""REST views of the review queue (docs/consolidation.md#the-review-queue-and-disputes): pairs
consolidation set aside, and promotion proposals, listed and decided.

Thin: parse, call a selector/service, serialize. Texts in ``extend_schema`` are the public API
documentation, written for API users (no class docstrings on the views: drf-spectacular would
publish them). Bodies and query strings are strict like everywhere in the API.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from consolidation.models import ReviewItem
from consolidation.promotion.selectors import promotions_attach
from consolidation.promotion.services import PROMOTION_DECISIONS
from consolidation.review.selectors import review_get, review_list
from consolidation.review.services import DECISIONS, review_decide
from consolidation.validation import NOTE_MAX
from memories.reads import project_resolve
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import StrictCharField, StrictQuerySerializer, StrictSerializer

TAGS = ["consolidation"]


class ReviewListQuerySerializer(StrictQuerySerializer):
    project = serializers.CharField(required=False, help_text="only this project's pairs (its slug)")
    status = serializers.ChoiceField(
        choices=[*(s for s, _ in ReviewItem.STATUS_CHOICES), "any"],
        required=False,
        help_text="`pending` (default: waiting for a decision), `contradicts`, `compatible`, `accepted`, "
        "`rejected` (promotions) or `any`",
    )
    kind = serializers.ChoiceField(
        choices=[k for k, _ in ReviewItem.KIND_CHOICES],
        required=False,
        help_text="only pairs with conflict cues (`conflict`), pairs the judge read (`judged`) or promotion "
        "proposals (`promotion`)",
    )


class ReviewMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    state = serializers.CharField(help_text="`active`, `archived`, or `proposed` (a promotion awaiting review)")


class PromotionSourceSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    project = serializers.CharField(allow_null=True, help_text="the source's project (its slug)")
    team = serializers.CharField(allow_null=True, help_text="for a team memory: its team (slug)")
    confidence = serializers.FloatField()
    usage_count = serializers.IntegerField()
    state = serializers.CharField(help_text="`active`: sources keep serving their projects")


class PromotionDetailSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["team", "org"], help_text="where the memory is proposed")
    team = serializers.CharField(allow_null=True, help_text="the team (slug) for team scope")
    confidence = serializers.FloatField(
        help_text="the sources' usage-weighted mean confidence plus a consensus bonus (up to +0.1 when they agree), "
        "at most 0.99"
    )
    sources = PromotionSourceSerializer(many=True, help_text="the memory of every project (team) it holds in")


class ReviewSerializer(serializers.Serializer):
    """Two similar memories that consolidation did not merge because their texts may disagree, or a
    memory proposed for team or org scope because it holds in several projects (teams)."""

    id = serializers.IntegerField(help_text="the review item's id, for deciding it")
    kind = serializers.ChoiceField(choices=[k for k, _ in ReviewItem.KIND_CHOICES])
    project = serializers.CharField(source="project.slug", allow_null=True, help_text="null for a promotion")
    first = ReviewMemorySerializer(help_text="the older memory; for a promotion, the proposed memory")
    second = ReviewMemorySerializer(allow_null=True, help_text="the newer memory; null for a promotion")
    similarity = serializers.FloatField(help_text="cosine similarity of their embeddings")
    cues = serializers.ListField(child=serializers.CharField(), help_text="what differs, e.g. `numbers: 5 vs 60`")
    status = serializers.ChoiceField(choices=[s for s, _ in ReviewItem.STATUS_CHOICES])
    decided_by = serializers.CharField(help_text="`judge`, the moderator who decided, or empty while pending")
    reason = serializers.CharField(help_text="why it waits, or the decision's note")
    run = serializers.CharField(source="run_id", allow_null=True, help_text="the consolidation run that found it")
    promotion = PromotionDetailSerializer(allow_null=True, help_text="a promotion's scope and sources; null for pairs")
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class ReviewListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_reviews_list",
        summary="List pairs waiting for review",
        description=(
            "Pairs of similar memories that consolidation set aside instead of merging because their texts may "
            "disagree (a negation, opposite words, different numbers or versions), newest first, one page at a "
            "time. Without an LLM judge, or when the judge could not answer, they wait here until a moderator "
            "decides. Promotion proposals wait here too (`kind` `promotion`): a memory that holds in several "
            "projects of a team (or in several teams) proposed for team (org) scope, with its sources. Filter by "
            "`project`, `kind` and `status` (pending by default). Needs `memories:read`."
        ),
        parameters=[ReviewListQuerySerializer],
        responses={200: ReviewSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        query = ReviewListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        slug = query.validated_data.get("project")
        project = project_resolve(self.principal, slug) if slug else None
        status = query.validated_data.get("status", ReviewItem.STATUS_PENDING)
        kind = query.validated_data.get("kind")
        items = review_list(
            self.principal, project=project, status=None if status == "any" else status, kinds=[kind] if kind else None
        )
        page = promotions_attach(self.principal, self.paginate_queryset(items))
        return self.get_paginated_response(ReviewSerializer(page, many=True).data)


class ReviewDecideSerializer(StrictSerializer):
    decision = serializers.ChoiceField(
        choices=[
            ("contradicts", "they contradict: link them as a dispute, never merge them"),
            ("compatible", "they agree: a later consolidation run may merge them"),
            ("accept", "a promotion: the proposed memory becomes active at its team or org scope"),
            ("reject", "a promotion: nothing is promoted, the same sources are not proposed again"),
        ],
        help_text="what the moderator found: `contradicts` or `compatible` for a pair, `accept` or `reject` for "
        "a promotion",
    )
    note = StrictCharField(
        required=False, allow_blank=True, max_length=NOTE_MAX, help_text="why, kept with the decision (optional)"
    )


assert {c for c, _ in ReviewDecideSerializer().fields["decision"].choices.items()} == {
    *DECISIONS,
    *PROMOTION_DECISIONS,
}


class ReviewDecideView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_reviews_decide",
        summary="Decide a pair waiting for review",
        description=(
            "Settle a pending pair: `contradicts` links the two memories as a contradiction (listed with the "
            "disputes, both stay active until someone keeps one or both), `compatible` clears the pair so that "
            "a later consolidation run may merge or synthesise it. A promotion proposal is settled with `accept` "
            "(the proposed memory becomes active at its team or org scope; its sources stay active and linked) or "
            "`reject` (nothing is promoted; the same sources are not proposed again). The optional `note` is kept "
            "with the decision, which is audited. An item already decided is a 409. Needs `memories:write`."
        ),
        parameters=[OpenApiParameter("review_id", str, OpenApiParameter.PATH, description="the review item's `id`")],
        request=ReviewDecideSerializer,
        responses={
            200: ReviewSerializer,
            **error_responses(400, 401, 403, 404, 409, 415, conflict="The pair was already decided."),
        },
    )
    def post(self, request: Request, review_id: str) -> Response:
        data = ReviewDecideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = review_get(self.principal, review_id)
        item = review_decide(
            principal=self.principal,
            item=item,
            decision=data.validated_data["decision"],
            note=data.validated_data.get("note", ""),
        )
        (item,) = promotions_attach(self.principal, [item])
        return Response(ReviewSerializer(item).data)
