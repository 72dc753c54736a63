import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
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


# --- how the owner signs in (docs/commands.md#how-the-owner-signs-in) ---


def _output(*args, stdin: str | None = None) -> list[str]:
    out = StringIO()
    if stdin is None:
        call_command(*args, stdout=out)
    else:
        call_command(*args, stdout=out, stdin=StringIO(stdin))
    return out.getvalue().strip().splitlines()


def _link_in(lines: list[str]) -> str:
    links = [line for line in lines if "/accounts/password/reset/key/" in line]
    assert len(links) == 1, lines
    return links[0].strip()


def test_create_org_prints_a_one_time_link_on_the_site_for_an_owner_without_a_password(db, settings):
    settings.SITE_URL = "https://rb.example.test"
    lines = _output("create_org", "initech", "--owner-email", "peter@initech.test")
    assert lines[-1] == "initech"  # the slug stays last, for scripts
    assert _link_in(lines).startswith("https://rb.example.test/accounts/password/reset/key/")
    assert any("peter@initech.test" in line and "one-time link" in line for line in lines)


def test_the_link_sets_the_owners_password_once_and_then_they_sign_in(db, settings):
    settings.SITE_URL = "http://testserver"
    link = _link_in(_output("create_org", "initech", "--owner-email", "peter@initech.test"))
    path = link.removeprefix("http://testserver")
    browser = Client()
    form_page = browser.get(path, follow=True)
    assert form_page.status_code == 200
    set_password_path = form_page.redirect_chain[-1][0]
    password = "tps-reports-in-triplicate"
    done = browser.post(set_password_path, {"password1": password, "password2": password})
    assert done.status_code == 302
    user = get_user_model().objects.get(email="peter@initech.test")
    assert user.check_password(password)
    assert Client().login(username=user.username, password=password)
    # one use: the same link no longer offers the form
    again = Client().get(path, follow=True)
    assert b'name="password1"' not in again.content


def test_the_page_after_the_link_sets_the_password_leads_to_the_sign_in_page(db, settings):
    settings.SITE_URL = "http://testserver"
    link = _link_in(_output("create_org", "initech", "--owner-email", "peter@initech.test"))
    browser = Client()
    set_password_path = browser.get(link.removeprefix("http://testserver"), follow=True).redirect_chain[-1][0]
    password = "tps-reports-in-triplicate"

    done = browser.post(set_password_path, {"password1": password, "password2": password}, follow=True)

    page = done.content.decode()
    assert done.status_code == 200 and "Password set" in page
    sign_in = re.search(r'<a [^>]*id="sign-in"[^>]*href="([^"]+)"', page)
    assert sign_in is not None and sign_in.group(1) == "/accounts/login/"
    signed_in = browser.post(sign_in.group(1), {"login": "peter@initech.test", "password": password})
    assert signed_in.status_code == 302 and "/accounts/login/" not in signed_in["Location"]


def test_create_org_reads_the_owners_password_from_stdin(db):
    lines = _output(
        "create_org", "initech", "--owner-email", "peter@initech.test", "--password-stdin", stdin="staplers-4-milton\n"
    )
    user = get_user_model().objects.get(email="peter@initech.test")
    assert user.check_password("staplers-4-milton")
    assert not any("/accounts/password/reset/key/" in line for line in lines)
    assert any("peter@initech.test" in line and "/accounts/login/" in line for line in lines)
    assert lines[-1] == "initech"


@pytest.mark.parametrize("password", ["", "\n", "short\n", "password\n"])
def test_an_empty_or_weak_password_from_stdin_is_refused_and_nothing_is_created(db, password):
    with pytest.raises(CommandError, match=r"(no password on standard input|password is not accepted)"):
        _output("create_org", "initech", "--owner-email", "peter@initech.test", "--password-stdin", stdin=password)
    assert not Organization.objects.filter(slug="initech").exists()
    assert not get_user_model().objects.filter(email="peter@initech.test").exists()


def test_password_stdin_needs_an_owner(db):
    with pytest.raises(CommandError, match="--owner-email"):
        _output("create_org", "initech", "--password-stdin", stdin="staplers-4-milton\n")
    assert not Organization.objects.filter(slug="initech").exists()


def test_an_owner_who_has_a_password_keeps_it(db):
    user = get_user_model().objects.create_user(username="peter", email="peter@initech.test", password="old-but-good-1")
    with pytest.raises(CommandError, match="already has a password"):
        _output(
            "create_org", "initech", "--owner-email", "peter@initech.test", "--password-stdin", stdin="new-one-here-2\n"
        )
    assert not Organization.objects.filter(slug="initech").exists()
    lines = _output("create_org", "initech", "--owner-email", "peter@initech.test")
    user.refresh_from_db()
    assert user.check_password("old-but-good-1")
    assert not any("/accounts/password/reset/key/" in line for line in lines)
    assert any("peter@initech.test" in line and "password they already have" in line for line in lines)


def test_a_failed_create_org_leaves_no_owner_behind(db):
    _output("create_org", "dup")
    with pytest.raises(CommandError, match="already exists"):
        _output("create_org", "dup", "--owner-email", "stray@dup.test")
    assert not get_user_model().objects.filter(email="stray@dup.test").exists()
