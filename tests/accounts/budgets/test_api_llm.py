"""REST: the organization's LLM budget (``GET``/``PATCH /api/v1/llm/budget``) and its spend
(``GET /api/v1/llm/spend``), docs/llm-spend.md. The spend's numbers are the metered rows' sums."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import Sum

from accounts.models import AuditEvent
from reasoningbank.models import LlmBudget, LlmCall, LlmPrice

BUDGET, SPEND = "/api/v1/llm/budget", "/api/v1/llm/spend"
ADMIN_SCOPES = ["memories:read", "admin"]


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert {"detail", "code"} <= set(body)
    return body


@pytest.fixture
def admin_client(cast, token_client):
    return token_client(cast.org_a, scopes=ADMIN_SCOPES)


def test_an_admin_token_sets_the_caps_and_reads_them_back_with_the_current_period(admin_client, cast):
    response = admin_client.patch(BUDGET, {"daily_tokens": 20_000, "alert_percent": 75}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["daily_tokens"], body["monthly_tokens"], body["alert_percent"]) == (20_000, None, 75)
    assert body["plan"] == "pro" and body["plan_monthly_tokens"] == 5_000_000
    caps = {c["cap"]: c for c in body["caps"]}
    assert caps["daily"]["limit"] == 20_000 and caps["daily"]["source"] == "organization"
    assert caps["daily"]["alert_at"] == 15_000 and caps["daily"]["used"] == 0
    assert caps["monthly"]["source"] == "plan" and caps["monthly"]["limit"] == 5_000_000
    assert admin_client.get(BUDGET).json() == body
    audit = AuditEvent.objects.get(organization=cast.org_a, verb="llm.budget_set")
    assert audit.data["to"] == {"daily_tokens": 20_000, "monthly_tokens": None, "alert_percent": 75}


def test_patch_changes_only_the_fields_given_and_null_removes_a_cap(admin_client, cast):
    admin_client.patch(BUDGET, {"daily_tokens": 20_000, "monthly_tokens": 400_000}, format="json")
    body = admin_client.patch(BUDGET, {"daily_tokens": None}, format="json").json()
    assert (body["daily_tokens"], body["monthly_tokens"], body["alert_percent"]) == (None, 400_000, 80)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"monthly_tokens": 5_000_001}, "monthly_tokens"),  # above the pro plan's 5,000,000
        ({"daily_tokens": 999}, "daily_tokens"),
        ({"daily_tokens": 30_000, "monthly_tokens": 20_000}, "daily_tokens"),
        ({"alert_percent": 0}, "alert_percent"),
        ({"alert_percent": 101}, "alert_percent"),
        ({"daily_tokens": "lots"}, "daily_tokens"),
        ({"weekly_tokens": 1_000}, "weekly_tokens"),  # an unknown field
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field_and_changes_nothing(admin_client, cast, payload, field):
    body = _error(admin_client.patch(BUDGET, payload, format="json"), 400)
    assert field in body["detail"] or field in body.get("errors", {})
    assert not LlmBudget.objects.filter(organization=cast.org_a).exists()


def test_a_token_without_the_admin_scope_reads_but_cannot_set_the_budget(cast, token_client):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert reader.get(BUDGET).status_code == 200
    _error(reader.patch(BUDGET, {"daily_tokens": 20_000}, format="json"), 403)
    assert not LlmBudget.objects.exists()


def test_a_token_restricted_to_a_project_gets_neither_the_budget_nor_the_spend(cast, token_client):
    restricted = token_client(cast.org_a, scopes=ADMIN_SCOPES, projects=[cast.project_a])
    _error(restricted.get(BUDGET), 403)
    _error(restricted.patch(BUDGET, {"daily_tokens": 20_000}, format="json"), 403)
    _error(restricted.get(SPEND), 403)
    assert not LlmBudget.objects.exists()


@pytest.mark.cross_tenant("api-llm-budget")
def test_another_organization_s_budget_is_neither_read_nor_changed(admin_client, cast, token_client):
    LlmBudget.objects.create(organization=cast.org_b, daily_tokens=7_000, alert_percent=60)
    body = admin_client.get(BUDGET).json()
    assert body["daily_tokens"] is None and body["alert_percent"] == 80
    admin_client.patch(BUDGET, {"daily_tokens": 9_000}, format="json")
    theirs = LlmBudget.objects.get(organization=cast.org_b)
    assert (theirs.daily_tokens, theirs.alert_percent) == (7_000, 60)


def metered(org, **kwargs) -> LlmCall:
    return LlmCall.objects.create(organization=org, **kwargs)


def test_the_spend_per_day_purpose_provider_and_model_equals_the_metered_rows(admin_client, cast):
    LlmPrice.objects.create(provider="openai", model="gpt-4o-mini", input_per_million="0.15", output_per_million="0.60")
    metered(
        cast.org_a,
        provider="openai",
        model="gpt-4o-mini",
        purpose="distill",
        input_tokens=1_000_000,
        output_tokens=100_000,
    )
    metered(
        cast.org_a, provider="openai", model="gpt-4o-mini", purpose="distill", input_tokens=2_000, output_tokens=300
    )
    metered(cast.org_a, provider="openai", model="gpt-4o-mini", purpose="judge", input_tokens=500, output_tokens=40)
    metered(
        cast.org_a,
        provider="anthropic",
        model="claude-haiku-4-5",
        purpose="synthesize",
        input_tokens=900,
        output_tokens=90,
    )
    metered(cast.org_a, provider="openai", model="gpt-4o-mini", purpose="distill", outcome="error", error="429")
    body = admin_client.get(SPEND, {"days": 7}).json()
    rows = LlmCall.objects.filter(organization=cast.org_a)
    sums = rows.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    assert (body["calls"], body["input_tokens"], body["output_tokens"]) == (rows.count(), sums["i"], sums["o"])
    assert body["failed"] == 1
    assert sum(r["calls"] for r in body["rows"]) == rows.count()
    assert sum(r["input_tokens"] for r in body["rows"]) == sums["i"]
    by_key = {(r["purpose"], r["provider"]): r for r in body["rows"]}
    distill = by_key[("distill", "openai")]
    assert (distill["calls"], distill["failed"], distill["input_tokens"], distill["output_tokens"]) == (
        3,
        1,
        1_002_000,
        100_300,
    )
    # (1,002,000 × 0.15 + 100,300 × 0.60) / 1,000,000 = 0.21048
    assert Decimal(distill["estimated_cost"]) == pytest.approx(Decimal("0.21048"), abs=Decimal("0.000001"))
    assert by_key[("synthesize", "anthropic")]["estimated_cost"] is None  # no price set for it
    assert body["unpriced_calls"] == 1
    assert {p["purpose"]: p["calls"] for p in body["by_purpose"]} == {"distill": 3, "judge": 1, "synthesize": 1}


def test_a_provider_wide_price_prices_every_model_without_its_own(admin_client, cast):
    LlmPrice.objects.create(
        provider="anthropic", model="", input_per_million="1", output_per_million="5", currency="EUR"
    )
    metered(
        cast.org_a, provider="anthropic", model="claude-x", purpose="distill", input_tokens=1_000_000, output_tokens=0
    )
    body = admin_client.get(SPEND).json()
    assert body["estimated_cost"] == {"EUR": "1.000000"}


def test_cached_input_tokens_per_day_and_purpose_equal_the_metered_rows_and_are_priced_lower(admin_client, cast):
    LlmPrice.objects.create(
        provider="anthropic",
        model="claude-haiku-4-5",
        input_per_million="1",
        output_per_million="5",
        cached_input_per_million="0.10",
        cache_write_per_million="1.25",
    )
    cached = {"provider": "anthropic", "model": "claude-haiku-4-5"}
    metered(cast.org_a, **cached, purpose="judge", input_tokens=1_000_000, cached_input_tokens=800_000, output_tokens=0)
    metered(cast.org_a, **cached, purpose="judge", input_tokens=200_000, cache_write_tokens=150_000, output_tokens=0)
    metered(cast.org_a, **cached, purpose="distill", input_tokens=50_000, cached_input_tokens=4_096, output_tokens=10)
    body = admin_client.get(SPEND, {"days": 1}).json()
    rows = LlmCall.objects.filter(organization=cast.org_a)
    sums = rows.aggregate(r=Sum("cached_input_tokens"), w=Sum("cache_write_tokens"))
    assert (body["cached_input_tokens"], body["cache_write_tokens"]) == (sums["r"], sums["w"]) == (804_096, 150_000)
    by_purpose = {p["purpose"]: p for p in body["by_purpose"]}
    assert (by_purpose["judge"]["cached_input_tokens"], by_purpose["judge"]["cache_write_tokens"]) == (800_000, 150_000)
    assert (by_purpose["distill"]["cached_input_tokens"], by_purpose["distill"]["cache_write_tokens"]) == (4_096, 0)
    judge = next(r for r in body["rows"] if r["purpose"] == "judge")
    assert (judge["input_tokens"], judge["cached_input_tokens"], judge["cache_write_tokens"]) == (
        1_200_000,
        800_000,
        150_000,
    )
    # uncached 250,000 × 1 + read 800,000 × 0.10 + written 150,000 × 1.25 = 517,500 per million → 0.5175
    assert Decimal(judge["estimated_cost"]) == pytest.approx(Decimal("0.5175"), abs=Decimal("0.000001"))


def test_cached_tokens_without_a_cache_price_cost_the_input_price(admin_client, cast):
    LlmPrice.objects.create(provider="openai", model="", input_per_million="2", output_per_million="8")
    metered(
        cast.org_a,
        provider="openai",
        model="gpt-x",
        purpose="distill",
        input_tokens=1_000_000,
        cached_input_tokens=600_000,
    )
    body = admin_client.get(SPEND).json()
    assert body["estimated_cost"] == {"USD": "2.000000"}
    assert body["rows"][0]["cached_input_tokens"] == 600_000


def test_calls_answered_through_a_batch_api_are_priced_at_half(admin_client, cast):
    # both providers bill their batch APIs at 50 % (docs/llm-spend.md#batch-mode)
    LlmPrice.objects.create(provider="anthropic", model="", input_per_million="1", output_per_million="5")
    common = {"provider": "anthropic", "model": "claude-haiku-4-5", "purpose": "synthesize"}
    metered(cast.org_a, **common, input_tokens=1_000_000, output_tokens=100_000)
    metered(cast.org_a, **common, input_tokens=1_000_000, output_tokens=100_000, batch=True)
    body = admin_client.get(SPEND).json()
    # direct: 1 + 0.5 = 1.5; batched: half of that, 0.75
    (row,) = body["rows"]
    assert Decimal(row["estimated_cost"]) == pytest.approx(Decimal("2.25"), abs=Decimal("0.000001"))
    assert (row["calls"], row["input_tokens"], row["output_tokens"]) == (2, 2_000_000, 200_000)


@pytest.mark.parametrize("days", ["0", "93", "week"])
def test_a_window_outside_1_to_92_days_is_a_400(admin_client, days):
    _error(admin_client.get(SPEND, {"days": days}), 400)


@pytest.mark.cross_tenant("api-llm-spend")
def test_another_organization_s_calls_are_absent_from_the_spend(admin_client, cast):
    metered(cast.org_b, provider="openai", model="m", purpose="distill", input_tokens=777, output_tokens=7)
    body = admin_client.get(SPEND).json()
    assert (body["calls"], body["input_tokens"], body["rows"]) == (0, 0, [])


def test_the_llm_endpoints_are_in_the_openapi_schema(api_client):
    paths = api_client.get("/api/schema/", {"format": "json"}).json()["paths"]
    assert {"get", "patch"} <= set(paths[BUDGET]) and "get" in paths[SPEND]
