"""REST views of the organization's LLM budget and spend (docs/llm-spend.md).

Both describe the whole organization: a token restricted to some projects gets a 403. Reading needs
`memories:read`; changing the caps needs `admin`. Texts in ``extend_schema`` are the public API
documentation (no class docstrings on the views: drf-spectacular would publish them).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.budgets.selectors import MAX_DAYS, spend_of
from accounts.budgets.services import MIN_CAP_TOKENS, llm_budget_get, llm_budget_set
from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_READ
from reasoningbank.ai.budget import budget_status
from reasoningbank.api_errors import error_responses
from reasoningbank.errors import Forbidden
from reasoningbank.serializers import StrictQuerySerializer, StrictSerializer

TAGS = ["llm"]
CACHED_HELP = "of input_tokens: read from the provider's prompt cache (billed lower)"
CACHE_WRITE_HELP = "of input_tokens: written to the provider's prompt cache (Anthropic bills them higher)"


class BudgetUpdateSerializer(StrictSerializer):
    daily_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=MIN_CAP_TOKENS,
        help_text="tokens per UTC day; null: no daily cap. At most the plan's monthly budget",
    )
    monthly_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=MIN_CAP_TOKENS,
        help_text="tokens per UTC month; null: the plan's monthly budget only. At most the plan's",
    )
    alert_percent = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=100,
        help_text="warn (banner, audit row, `llm.budget_alert` webhook) at this share of a cap, once per period; "
        "null: no warning",
    )


class CapSerializer(serializers.Serializer):
    cap = serializers.ChoiceField(choices=["daily", "monthly"], source="cap.name")
    source = serializers.ChoiceField(
        choices=["organization", "plan"],
        source="cap.source",
        help_text="`organization`: set by its admins; `plan`: the plan's `llm_tokens_per_month`",
    )
    limit = serializers.IntegerField(source="cap.limit")
    used = serializers.IntegerField(
        help_text="tokens spent in the current period: what providers reported, each call at most its ceiling"
    )
    reserved = serializers.IntegerField(help_text="tokens held for calls in flight: their likely costs")
    over_reported = serializers.IntegerField(
        help_text="tokens providers reported in the current period beyond what their calls could spend (prompt "
        "and max_tokens): in the spend's figures, not in `used`"
    )
    remaining = serializers.IntegerField()
    percent = serializers.FloatField(help_text="used, as a percentage of the cap")
    period_start = serializers.DateField()
    resets_at = serializers.DateTimeField(help_text="when the period turns and waiting work goes on")
    alert_at = serializers.IntegerField(allow_null=True, help_text="tokens at which the alert fires")
    alerted = serializers.BooleanField(help_text="the alert was sent in this period")
    reached = serializers.BooleanField(help_text="a call waited at this cap in this period")


class BudgetSerializer(serializers.Serializer):
    daily_tokens = serializers.IntegerField(allow_null=True)
    monthly_tokens = serializers.IntegerField(allow_null=True)
    alert_percent = serializers.IntegerField(allow_null=True)
    plan = serializers.CharField()
    plan_monthly_tokens = serializers.IntegerField(allow_null=True, help_text="null: the plan has no LLM budget")
    caps = CapSerializer(many=True, help_text="the caps in force, with the current period's counters")


class SpendQuerySerializer(StrictQuerySerializer):
    days = serializers.IntegerField(
        required=False, default=30, min_value=1, max_value=MAX_DAYS, help_text="the last N UTC days, today included"
    )


class SpendRowSerializer(serializers.Serializer):
    date = serializers.DateField(source="day")
    purpose = serializers.CharField(help_text="distill, judge, supersede, synthesize, summarize, patterns, reason…")
    provider = serializers.CharField()
    model = serializers.CharField()
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()
    input_tokens = serializers.IntegerField(help_text="every prompt token, those served from a prompt cache included")
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField(help_text=CACHED_HELP)
    cache_write_tokens = serializers.IntegerField(help_text=CACHE_WRITE_HELP)
    estimated_cost = serializers.DecimalField(
        max_digits=18, decimal_places=6, allow_null=True, help_text="null: the operator set no price for this model"
    )
    currency = serializers.CharField(allow_null=True)


class PurposeTotalSerializer(serializers.Serializer):
    purpose = serializers.CharField()
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField(help_text=CACHED_HELP)
    cache_write_tokens = serializers.IntegerField(help_text=CACHE_WRITE_HELP)


class SpendSerializer(serializers.Serializer):
    since = serializers.DateField()
    until = serializers.DateField()
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField(help_text=CACHED_HELP)
    cache_write_tokens = serializers.IntegerField(help_text=CACHE_WRITE_HELP)
    estimated_cost = serializers.DictField(
        child=serializers.DecimalField(max_digits=18, decimal_places=6), help_text="per currency"
    )
    unpriced_calls = serializers.IntegerField(help_text="calls of models without a price: not in the cost")
    by_purpose = PurposeTotalSerializer(many=True)
    rows = SpendRowSerializer(many=True, help_text="per UTC day, purpose, provider and model; newest day first")


class LlmAPIView(OrgAPIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.principal.is_restricted:  # before any read: the numbers are the whole organization's
            raise Forbidden("a token restricted to some projects cannot read or set the organization's LLM budget")

    def budget_body(self) -> dict[str, Any]:
        budget = llm_budget_get(self.principal)
        organization = self.principal.organization
        return BudgetSerializer(
            {
                "daily_tokens": budget.daily_tokens,
                "monthly_tokens": budget.monthly_tokens,
                "alert_percent": budget.alert_percent,
                "plan": organization.plan,
                "plan_monthly_tokens": organization.limit("llm_tokens_per_month"),
                "caps": budget_status(organization),
            }
        ).data


class BudgetView(LlmAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "PATCH": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="llm_budget_retrieve",
        summary="The LLM budget",
        description=(
            "The organization's own LLM caps (per UTC day and month), its alert percentage, its plan's monthly "
            "budget, and each cap in force with the current period's tokens. Needs `memories:read` and a token "
            "for the whole organization."
        ),
        responses={200: BudgetSerializer, **error_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response(self.budget_body())

    @extend_schema(
        tags=TAGS,
        operation_id="llm_budget_update",
        summary="Set the LLM budget",
        description=(
            "Change the organization's caps: the fields given replace the stored ones (null removes a cap). A cap "
            f"is at least {MIN_CAP_TOKENS:,} tokens and never above the plan's monthly budget; a daily cap above "
            "the monthly one is refused. At a cap, distillation and consolidation wait (`waiting_for_budget`) and "
            "`memory_ask` answers 403 `limit_exceeded`. Audited. Needs `admin` and a token for the whole "
            "organization."
        ),
        request=BudgetUpdateSerializer,
        responses={200: BudgetSerializer, **error_responses(400, 401, 403, 415)},
    )
    def patch(self, request: Request) -> Response:
        body = BudgetUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        current = llm_budget_get(self.principal)
        values = {
            "daily_tokens": current.daily_tokens,
            "monthly_tokens": current.monthly_tokens,
            "alert_percent": current.alert_percent,
            **body.validated_data,
        }
        llm_budget_set(principal=self.principal, **values)
        return Response(self.budget_body())


class SpendView(LlmAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="llm_spend_retrieve",
        summary="LLM spend per day",
        description=(
            "The organization's LLM calls and tokens per UTC day, purpose, provider and model over the last "
            f"`days` (30 by default, at most {MAX_DAYS}), summed from its metered calls, with an estimated cost "
            "from the operator's price table. Needs `memories:read` and a token for the whole organization."
        ),
        parameters=[SpendQuerySerializer],
        responses={200: SpendSerializer, **error_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> Response:
        query = SpendQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(SpendSerializer(spend_of(self.principal, days=query.validated_data["days"])).data)
