"""REST view for institutional promotion (docs/consolidation.md#institutional-promotion): an org admin
runs the pass on demand.

Thin: parse, call the service, serialize. The proposals themselves are review items
(``GET /api/v1/consolidation/reviews?kind=promotion``, decided with ``…/decide``).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN
from consolidation.promotion.reports import SKIP_REASONS
from consolidation.promotion.services import promotions_propose
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import StrictBooleanField, StrictSerializer

TAGS = ["consolidation"]


class PromotionRunSerializer(StrictSerializer):
    dry_run = StrictBooleanField(required=False, default=False, help_text="only report what would be proposed")


class ProposalSourceSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    project = serializers.CharField(allow_null=True, help_text="its project (slug); null for a team memory")
    team = serializers.CharField(allow_null=True, help_text="for a team memory: its team (slug)")
    confidence = serializers.FloatField()
    usage_count = serializers.IntegerField()


class ProposalSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["pending", "accepted", "would_propose"],
        help_text="`pending`: waits in the review queue; `accepted`: promoted at once (the organization accepts "
        "promotions automatically); `would_propose`: a dry run",
    )
    scope = serializers.ChoiceField(choices=["team", "org"])
    team = serializers.CharField(allow_null=True, help_text="the team (slug) for team scope")
    title = serializers.CharField()
    places = serializers.ListField(
        child=serializers.CharField(), help_text="the projects (team scope) or teams (org scope) it holds in"
    )
    sources = ProposalSourceSerializer(many=True)
    confidence = serializers.FloatField(help_text="weighted + bonus, at most 0.99")
    weighted = serializers.FloatField(help_text="the sources' confidence, each weighted by its usage count + 1")
    bonus = serializers.FloatField(help_text="the consensus bonus: up to +0.1 when the sources agree")
    similarity = serializers.FloatField(help_text="average cosine similarity of the sources")
    review_id = serializers.IntegerField(allow_null=True, help_text="the review item; null in a dry run")
    memory_id = serializers.CharField(allow_null=True, help_text="the proposed memory; null in a dry run")


class PromotionReportSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    candidates = serializers.IntegerField(help_text="trusted procedural memories of projects and teams looked at")
    proposed = ProposalSerializer(many=True)
    accepted = serializers.IntegerField(help_text="proposals accepted at once (automatic promotion)")
    skipped = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="groups not proposed, by reason: "
        + "; ".join(f"`{reason}`: {text}" for reason, text in SKIP_REASONS.items()),
    )


class PromotionRunView(OrgAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_promotions_run",
        summary="Propose institutional promotions",
        description=(
            "Look for lessons that hold across the organization's projects (institutional knowledge): "
            "a procedural memory with similar twins, every one trusted (confidence at least "
            "`PROMOTION_MIN_CONFIDENCE`, 0.8), in at least `PROMOTION_MIN_PROJECTS` (2) projects of one team is "
            "proposed for the team; in that many teams, for the organization. A proposal is a consolidated "
            "memory linked to every source, with their usage-weighted confidence plus a consensus bonus; it waits in "
            "the review queue (`kind` `promotion`) unless the organization accepts promotions automatically. A "
            "set of sources is proposed once. Runs daily by itself; `dry_run` only reports. Needs `admin`, a "
            "token not restricted to some projects, and the Teams plan or above."
        ),
        request=PromotionRunSerializer,
        responses={200: PromotionReportSerializer, **error_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> Response:
        data = PromotionRunSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = promotions_propose(principal=self.principal, dry_run=data.validated_data["dry_run"])
        return Response(PromotionReportSerializer(report).data)
