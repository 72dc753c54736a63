"""The dashboard's LLM spend page (Settings → LLM spend): the caps with the current period, the form
owners and admins change them with (a viewer reads them and gets a 403 on a POST), and the spend per
day by purpose, provider and model, whose numbers are the metered rows' sums."""

from __future__ import annotations

import html
import re

import pytest

from accounts.models import AuditEvent
from reasoningbank.models import LlmBudget, LlmCall, LlmPrice

PAGE, FORM = "/settings/usage/", "/settings/usage/budget/"


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_owner_gets_the_budget_form_and_the_viewer_reads_the_caps(client, cast):
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=40_000, alert_percent=70)
    client.force_login(cast.alice)
    owner = text(client.get(PAGE))
    assert "data-budget-form" in owner and 'name="daily_tokens" value="40000"' in owner
    client.force_login(cast.bob)
    viewer = text(client.get(PAGE))
    assert "data-budget-form" not in viewer and "data-budget-readonly" in viewer
    assert "40,000 tokens" in viewer and "70%" in viewer
    assert 'data-cap="daily"' in viewer and 'data-cap="monthly"' in viewer


def test_a_cap_shows_the_tokens_a_provider_over_reported_this_period(client, cast):
    from django.utils import timezone

    from reasoningbank.models import LlmBudgetPeriod

    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=40_000, alert_percent=None)
    LlmBudgetPeriod.objects.create(
        organization=cast.org_a, period="day", start=timezone.now().date(), used_tokens=3_000,
        over_reported_tokens=45_104,
    )  # fmt: skip
    client.force_login(cast.bob)
    page = text(client.get(PAGE))
    daily = page[page.index('data-cap="daily"') : page.index('data-cap="monthly"')]
    assert "3,000" in daily and "45,104 over-reported" in daily
    assert "over-reported" not in page[page.index('data-cap="monthly"') :]  # the month's row has none


def test_the_owner_saves_caps_with_an_audit_row(client, cast):
    client.force_login(cast.alice)
    response = client.post(FORM, {"daily_tokens": "25,000", "monthly_tokens": "", "alert_percent": "90"})
    assert response.status_code == 302
    budget = LlmBudget.objects.get(organization=cast.org_a)
    assert (budget.daily_tokens, budget.monthly_tokens, budget.alert_percent) == (25_000, None, 90)
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="llm.budget_set").count() == 1


def test_a_cap_above_the_plan_is_refused_with_a_form_error_and_nothing_saved(client, cast):
    client.force_login(cast.alice)
    response = client.post(FORM, {"daily_tokens": "", "monthly_tokens": "6000000", "alert_percent": "80"})
    assert response.status_code == 400
    assert "above the pro plan's 5,000,000" in text(response)
    assert not LlmBudget.objects.exists()


def test_a_viewer_posting_the_form_gets_a_403_and_nothing_changes(client, cast):
    client.force_login(cast.bob)
    assert client.post(FORM, {"daily_tokens": "1000", "monthly_tokens": "", "alert_percent": ""}).status_code == 403
    assert not LlmBudget.objects.exists()


@pytest.mark.cross_tenant("settings-budget")
def test_the_form_sets_the_signed_in_organization_s_budget_only(client, cast):
    LlmBudget.objects.create(organization=cast.org_b, daily_tokens=9_000, alert_percent=50)
    client.force_login(cast.alice)
    client.post(FORM, {"daily_tokens": "2000", "monthly_tokens": "", "alert_percent": ""})
    theirs = LlmBudget.objects.get(organization=cast.org_b)
    assert (theirs.daily_tokens, theirs.alert_percent) == (9_000, 50)
    assert LlmBudget.objects.get(organization=cast.org_a).daily_tokens == 2_000


def cell(body: str, name: str) -> str:
    match = re.search(rf'data-total="{name}">([^<]*)', body)
    assert match, name
    return match.group(1).strip()


@pytest.mark.cross_tenant("settings-usage")
def test_the_spend_page_numbers_equal_the_metered_rows_of_this_organization_only(client, cast):
    LlmPrice.objects.create(provider="openai", model="", input_per_million="2", output_per_million="8")
    for org, purpose, tokens_in, tokens_out in (
        (cast.org_a, "distill", 1_200_000, 300_000),
        (cast.org_a, "synthesize", 500, 50),
        (cast.org_b, "judge", 999_999, 1),
    ):
        LlmCall.objects.create(
            organization=org,
            provider="openai",
            model="gpt-x",
            purpose=purpose,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
        )
    client.force_login(cast.bob)
    body = text(client.get(PAGE))
    assert cell(body, "calls") == "2"
    assert cell(body, "input_tokens") == "1,200,500"
    assert cell(body, "output_tokens") == "300,050"
    # (1,200,500 × 2 + 300,050 × 8) / 1,000,000 = 4.8014
    assert cell(body, "cost").startswith("4.80 USD")
    assert "Distill session" in body and "Synthesize cluster" in body
    assert "Contradiction judge" not in body and "999,999" not in body  # globex's call


def test_the_spend_page_shows_the_cached_input_tokens_of_the_metered_rows(client, cast):
    for cached, written in ((3_000, 0), (1_024, 2_048)):
        LlmCall.objects.create(
            organization=cast.org_a,
            provider="anthropic",
            model="claude-haiku-4-5",
            purpose="judge",
            input_tokens=5_000,
            cached_input_tokens=cached,
            cache_write_tokens=written,
            output_tokens=10,
        )
    client.force_login(cast.bob)
    body = text(client.get(PAGE))
    assert cell(body, "input_tokens") == "10,000"
    assert cell(body, "cached_input_tokens") == "4,024"
    assert cell(body, "cache_write_tokens") == "(2,048 written to it)"
    assert re.search(r"<td data-cached>4,024 <span class=\"hint\">\(\+2,048 written\)</span></td>", body)
