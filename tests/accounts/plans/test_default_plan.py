"""DEFAULT_PLAN: the plan every new organization starts on, whichever way it is made
(docs/tenancy.md#plans-and-the-default-plan). A self-hosted install gets the top plan unless it says
otherwise; a hosted service sets ``free``; a value that names no plan stops the process at start."""

from __future__ import annotations

import runpy
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from accounts.models import AuditEvent, Membership, Organization
from accounts.organizations.services import organization_create
from accounts.plans.catalogue import PLAN_ENTERPRISE, PLAN_ORDER
from reasoningbank.settings import base as base_settings

pytestmark = pytest.mark.django_db

BASE_SETTINGS = str(Path(base_settings.__file__))  # run afresh: the module reads the environment once
SIGNUP = {"password1": "a-long-unusual-passphrase", "password2": "a-long-unusual-passphrase"}


def _signup_plan(client, email: str) -> str:
    response = client.post("/accounts/signup/", {"email": email, **SIGNUP})
    assert response.status_code == 302
    user = get_user_model().objects.get(email=email)
    return Membership.objects.select_related("organization").get(user=user).organization.plan


def test_left_unset_the_default_plan_is_the_top_plan_so_a_self_hosted_install_has_every_feature(monkeypatch):
    monkeypatch.delenv("DEFAULT_PLAN", raising=False)

    loaded = runpy.run_path(BASE_SETTINGS)

    assert loaded["DEFAULT_PLAN"] == PLAN_ORDER[-1] == PLAN_ENTERPRISE


def test_a_default_plan_that_names_no_plan_stops_the_start_naming_the_plans_allowed(monkeypatch):
    monkeypatch.setenv("DEFAULT_PLAN", "gold")

    with pytest.raises(ImproperlyConfigured) as raised:
        runpy.run_path(BASE_SETTINGS)

    assert "DEFAULT_PLAN" in str(raised.value) and "'gold'" in str(raised.value)
    assert "free, pro, teams, enterprise" in str(raised.value)


def test_a_dashboard_signup_lands_on_the_default_plan(client, settings):
    settings.DEFAULT_PLAN = "enterprise"
    assert _signup_plan(client, "dana@selfhosted.test") == "enterprise"

    client.logout()
    settings.DEFAULT_PLAN = "free"
    assert _signup_plan(client, "erin@hosted.test") == "free"


def test_create_org_without_a_plan_uses_the_default_plan_and_an_explicit_plan_wins(settings):
    settings.DEFAULT_PLAN = "teams"
    call_command("create_org", "initech", stdout=StringIO())
    call_command("create_org", "hooli", "--plan", "pro", stdout=StringIO())

    assert Organization.objects.get(slug="initech").plan == "teams"
    assert Organization.objects.get(slug="hooli").plan == "pro"


def test_the_service_records_the_default_plan_in_the_creation_audit(settings):
    settings.DEFAULT_PLAN = "pro"

    org = organization_create(slug="umbrella")

    assert org.plan == "pro"
    assert AuditEvent.objects.get(organization=org, verb="organization.create").data == {"plan": "pro"}


def test_the_admin_add_form_starts_on_the_default_plan(client, settings, django_user_model):
    settings.DEFAULT_PLAN = "teams"
    staff = django_user_model.objects.create_superuser("root", "root@example.test", "a-long-unusual-passphrase")
    client.force_login(staff)

    body = client.get("/admin/accounts/organization/add/").content.decode()

    assert '<option value="teams" selected>' in body
