from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Membership, Organization


def _last_line(*args, **kwargs) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue().strip().splitlines()[-1]


def test_the_commands_create_an_org_a_project_and_a_working_token(db):
    assert _last_line("create_org", "initech", "--plan", "pro", "--owner-email", "peter@initech.test") == "initech"
    org = Organization.objects.get(slug="initech")
    assert org.plan == "pro"
    assert Membership.objects.get(organization=org).role == "owner"
    assert _last_line("create_project", "initech", "tps-reports") == "tps-reports"
    raw = _last_line("create_token", "initech", "--label", "agent", "--project", "tps-reports")
    assert raw.startswith("rb_")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = client.get("/api/v1/me").json()
    assert body["organization"]["slug"] == "initech"
    assert [p["slug"] for p in body["projects"]] == ["tps-reports"]
    assert body["scopes"] == ["consolidation:run", "memories:read", "memories:write"]


def test_create_token_accepts_explicit_scopes(db):
    _last_line("create_org", "hooli")
    raw = _last_line("create_token", "hooli", "--label", "reader", "--scopes", "memories:read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/me").json()["scopes"] == ["memories:read"]


def test_create_project_in_a_team_creates_the_team_on_a_teams_plan(db):
    _last_line("create_org", "umbrella", "--plan", "teams")
    assert _last_line("create_project", "umbrella", "hive", "--team", "research") == "hive"
    assert Organization.objects.get(slug="umbrella").projects.get().team.slug == "research"


def test_commands_fail_clearly_on_bad_input(db):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("create_project", "nope", "x", stdout=StringIO())
    _last_line("create_org", "dup")
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_org", "dup", stdout=StringIO())
    with pytest.raises(CommandError, match="unknown scope"):
        call_command("create_token", "dup", "--label", "x", "--scopes", "everything", stdout=StringIO())
    with pytest.raises(CommandError, match="lowercase"):
        call_command("create_org", "Bad Slug!", stdout=StringIO())


def test_set_plan_changes_an_orgs_plan_audited_and_refuses_an_unknown_org_or_plan(db):
    _last_line("create_org", "vandelay", "--plan", "free")

    assert _last_line("set_plan", "vandelay", "pro") == "pro"

    org = Organization.objects.get(slug="vandelay")
    assert org.plan == "pro"
    change = AuditEvent.objects.get(organization=org, verb="organization.plan_change")
    assert change.data == {"from": "free", "to": "pro"}
    with pytest.raises(CommandError, match="does not exist"):
        call_command("set_plan", "nope", "pro", stdout=StringIO())
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("set_plan", "vandelay", "gold", stdout=StringIO())
