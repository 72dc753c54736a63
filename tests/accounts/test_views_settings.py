"""Dashboard settings pages and the org switcher: who may read, who may change, and tenancy."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.conf import settings

from accounts.models import ApiToken, AuditEvent, Membership, Project, Team
from accounts.tokens.services import token_create, token_digest
from accounts.views_base import SESSION_ORG_KEY
from reasoningbank.models import LlmCall
from tests.factories import MembershipFactory, OrganizationFactory, UserFactory

PAGES = [
    "/settings/",
    "/settings/teams/",
    "/settings/projects/",
    "/settings/tokens/",
    "/settings/usage/",
    "/settings/plan/",
]


def login(client, user):
    client.force_login(user)
    return client


def text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("url", PAGES)
def test_every_settings_page_renders_for_the_owner_and_the_viewer(client, cast, url):
    for user in (cast.alice, cast.bob):
        login(client, user)
        response = client.get(url)
        assert response.status_code == 200, (user.email, url)
        body = text(response)
        assert "Settings" in body
        assert 'aria-current="page"' in body


def test_settings_requires_login(client, cast):
    response = client.get("/settings/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_viewer_sees_read_only_pages(client, cast):
    login(client, cast.bob)
    assert "Invite a member" not in text(client.get("/settings/"))
    assert "Create a token" not in text(client.get("/settings/tokens/"))
    assert "Create a project" not in text(client.get("/settings/projects/"))
    assert "Change plan" not in text(client.get("/settings/plan/"))


def test_viewer_posts_are_forbidden_and_change_nothing(client, cast):
    token, _ = token_create(organization=cast.org_a, label="ci")
    alice_membership = Membership.objects.get(user=cast.alice)
    login(client, cast.bob)
    before = (
        Membership.objects.count(),
        Project.objects.count(),
        Team.objects.count(),
        ApiToken.objects.count(),
        AuditEvent.objects.count(),
    )
    posts = [
        ("/settings/members/invite/", {"email": "eve@acme.test", "role": "admin"}),
        (f"/settings/members/{alice_membership.pk}/role/", {"role": "viewer"}),
        (f"/settings/members/{alice_membership.pk}/remove/", {}),
        ("/settings/teams/", {"name": "Platform"}),
        ("/settings/projects/", {"name": "New thing"}),
        ("/settings/tokens/", {"label": "sneaky", "scopes": ["admin"]}),
        (f"/settings/tokens/{token.pk}/revoke/", {}),
        ("/settings/plan/", {"plan": "enterprise"}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    after = (
        Membership.objects.count(),
        Project.objects.count(),
        Team.objects.count(),
        ApiToken.objects.count(),
        AuditEvent.objects.count(),
    )
    assert after == before
    token.refresh_from_db()
    assert token.revoked_at is None
    cast.org_a.refresh_from_db()
    assert cast.org_a.plan == "pro"
    assert Membership.objects.get(pk=alice_membership.pk).role == "owner"


def test_owner_invites_a_member_and_changes_their_role_then_removes_them(client, cast):
    login(client, cast.alice)
    response = client.post("/settings/members/invite/", {"email": "Dana@Acme.test", "role": "member"})
    assert response.status_code == 302
    membership = Membership.objects.select_related("user").get(organization=cast.org_a, user__email="dana@acme.test")
    assert membership.role == "member"
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="membership.add").exists()
    assert "dana@acme.test" in text(client.get("/settings/"))

    assert client.post(f"/settings/members/{membership.pk}/role/", {"role": "admin"}).status_code == 302
    membership.refresh_from_db()
    assert membership.role == "admin"

    assert client.post(f"/settings/members/{membership.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_invite_errors_are_form_errors_not_500(client, cast):
    login(client, cast.alice)
    response = client.post("/settings/members/invite/", {"email": "bob@acme.test", "role": "member"})
    assert response.status_code == 400
    assert "already a member" in text(response)
    response = client.post("/settings/members/invite/", {"email": "not-an-email", "role": "member"})
    assert response.status_code == 400
    assert "valid email" in text(response)


def test_the_last_owner_cannot_be_demoted(client, cast):
    login(client, cast.alice)
    membership = Membership.objects.get(user=cast.alice)
    response = client.post(f"/settings/members/{membership.pk}/role/", {"role": "admin"})
    assert response.status_code == 400
    assert "at least one owner" in text(response)
    membership.refresh_from_db()
    assert membership.role == "owner"


def test_an_admin_cannot_grant_or_take_the_owner_role(client, cast):
    admin = UserFactory(email="adam@acme.test")
    MembershipFactory(user=admin, organization=cast.org_a, role="admin")
    login(client, admin)
    bob_membership = Membership.objects.get(user=cast.bob)
    alice_membership = Membership.objects.get(user=cast.alice)
    assert client.post(f"/settings/members/{bob_membership.pk}/role/", {"role": "owner"}).status_code == 403
    assert client.post(f"/settings/members/{alice_membership.pk}/remove/").status_code == 403
    assert client.post(f"/settings/members/{bob_membership.pk}/role/", {"role": "member"}).status_code == 302
    bob_membership.refresh_from_db()
    assert bob_membership.role == "member"


def test_owner_creates_a_project_with_the_plan_limit_shown(client, cast):
    login(client, cast.alice)
    page = text(client.get("/settings/projects/"))
    assert "1 of 25 projects used" in page
    response = client.post("/settings/projects/", {"name": "Mobile App", "slug": ""})
    assert response.status_code == 302
    project = Project.objects.get(organization=cast.org_a, slug="mobile-app")
    assert project.name == "Mobile App"
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="project.create", target_id=str(project.pk)).exists()
    # a duplicate slug is a form error
    response = client.post("/settings/projects/", {"name": "Again", "slug": "mobile-app"})
    assert response.status_code == 400
    assert "already exists" in text(response)


def test_project_limit_message_on_the_free_plan(client, cast):
    cast.org_a.plan = "free"
    cast.org_a.save()
    for slug in ("two", "three"):
        Project.objects.create(organization=cast.org_a, slug=slug, name=slug)
    login(client, cast.alice)
    page = text(client.get("/settings/projects/"))
    assert "allows 3 projects; upgrade to add more" in page
    response = client.post("/settings/projects/", {"name": "Four"})
    assert response.status_code == 400
    assert not Project.objects.filter(slug="four").exists()


def test_teams_are_gated_on_pro_and_created_on_teams(client, cast):
    login(client, cast.alice)
    page = text(client.get("/settings/teams/"))
    assert "Teams need the Teams plan" in page
    response = client.post("/settings/teams/", {"name": "Platform"})
    assert response.status_code == 400
    assert not Team.objects.exists()

    cast.org_a.plan = "teams"
    cast.org_a.save()
    assert "Teams need the Teams plan" not in text(client.get("/settings/teams/"))
    assert client.post("/settings/teams/", {"name": "Platform"}).status_code == 302
    team = Team.objects.get(organization=cast.org_a, slug="platform")
    # a project can then be created inside the team
    assert client.post("/settings/projects/", {"name": "Infra", "team": str(team.pk)}).status_code == 302
    assert Project.objects.get(slug="infra").team == team


def test_creating_a_token_shows_it_once_with_both_snippets_and_revoking_it(client, cast):
    login(client, cast.alice)
    response = client.post(
        "/settings/tokens/",
        {
            "label": "alice laptop",
            "scopes": ["memories:read", "memories:write"],
            "projects": [str(cast.project_a.pk)],
            "expires": "2999-12-31",
        },
    )
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = text(response)
    raw = re.search(r"rb_[A-Za-z0-9_\-]{40,}", body).group(0)
    token = ApiToken.objects.get(organization=cast.org_a, label="alice laptop")
    assert token.digest == token_digest(raw)
    assert sorted(token.scopes) == ["memories:read", "memories:write"]
    assert list(token.projects.all()) == [cast.project_a]
    assert token.expires_at is not None and token.expires_at.year == 3000
    assert token.created_by == cast.alice

    url = settings.SITE_URL.rstrip("/") + "/mcp"
    assert f'claude mcp add --transport http reasoningbank {url} --header "Authorization: Bearer {raw}"' in body
    block = re.search(r'<pre class="snippet" id="snippet-json">(.*?)</pre>', body, re.S).group(1)
    assert json.loads(block) == {
        "mcpServers": {"reasoningbank": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {raw}"}}}
    }
    assert 'data-copy="raw-token"' in body
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="token.create").exists()

    # shown once: the list page afterwards has the prefix, never the raw value or the digest
    listing = text(client.get("/settings/tokens/"))
    assert token.prefix in listing
    assert raw not in listing
    assert token.digest not in listing
    assert "web-app" in listing

    assert client.post(f"/settings/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert "revoked" in text(client.get("/settings/tokens/"))
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="token.revoke").exists()


def test_connecting_an_agent_offers_the_claude_code_plugin_first_then_the_other_clients(client, cast):
    login(client, cast.alice)
    body = text(client.post("/settings/tokens/", {"label": "laptop", "scopes": ["memories:read", "memories:write"]}))
    raw = re.search(r"rb_[A-Za-z0-9_\-]{40,}", body).group(0)
    site = settings.SITE_URL.rstrip("/")
    snippets = re.findall(r'<pre class="snippet" id="snippet-([a-z-]+)">(.*?)</pre>', body, re.S)
    order = [name for name, _ in snippets]
    assert order[:2] == ["plugin-env", "plugin"]  # the plugin first: its environment, then its commands
    assert order[2:] == ["claude", "codex", "cursor", "gemini", "json"]
    found = {name: html.unescape(content) for name, content in snippets}
    assert found["plugin-env"] == f"export REASONINGBANK_URL={site}\nexport REASONINGBANK_TOKEN={raw}"
    assert found["plugin"].splitlines() == [
        "/plugin marketplace add /path/to/reasoningbank",
        "/plugin install reasoningbank@reasoningbank",
    ]
    assert f'url = "{site}/mcp"' in found["codex"] and 'bearer_token_env_var = "REASONINGBANK_TOKEN"' in found["codex"]
    cursor, gemini = json.loads(found["cursor"]), json.loads(found["gemini"])
    assert cursor["mcpServers"]["reasoningbank"] == {
        "url": f"{site}/mcp",
        "headers": {"Authorization": "Bearer ${env:REASONINGBANK_TOKEN}"},
    }
    assert gemini["mcpServers"]["reasoningbank"] == {
        "httpUrl": f"{site}/mcp",
        "headers": {"Authorization": "Bearer ${REASONINGBANK_TOKEN}"},
    }


def test_every_snippet_that_names_the_token_variable_names_reasoningbank_token_and_files_hold_no_token(client, cast):
    """One variable name everywhere: the one the plugin, the hooks and the SDKs read."""
    login(client, cast.alice)
    body = text(client.post("/settings/tokens/", {"label": "laptop", "scopes": ["memories:read"]}))
    raw = re.search(r"rb_[A-Za-z0-9_\-]{40,}", body).group(0)
    found = dict(re.findall(r'<pre class="snippet" id="snippet-([a-z-]+)">(.*?)</pre>', body, re.S))
    named = {name: set(re.findall(r"\b[A-Z][A-Z_]*TOKEN\b", html.unescape(snippet))) for name, snippet in found.items()}

    assert set().union(*named.values()) == {"REASONINGBANK_TOKEN"}
    assert {"plugin-env", "codex", "cursor", "gemini"} <= {name for name, names in named.items() if names}
    assert raw not in found["cursor"] and raw not in found["gemini"]  # config files, often committed


def test_token_list_never_contains_a_digest(client, cast):
    tokens = [token_create(organization=cast.org_a, label=f"t{i}")[0] for i in range(3)]
    for user in (cast.alice, cast.bob):
        login(client, user)
        body = text(client.get("/settings/tokens/"))
        for token in tokens:
            assert token.prefix in body
            assert token.digest not in body
        assert "digest" not in body.lower()


@pytest.mark.cross_tenant("settings-tokens")
def test_token_form_errors(client, cast):
    login(client, cast.alice)
    response = client.post("/settings/tokens/", {"label": "", "scopes": ["memories:read"]})
    assert response.status_code == 400
    assert "label is required" in text(response)
    response = client.post("/settings/tokens/", {"label": "x", "scopes": []})
    assert response.status_code == 400
    assert "at least one scope" in text(response)
    response = client.post("/settings/tokens/", {"label": "x", "scopes": ["memories:read"], "expires": "2001-01-01"})
    assert response.status_code == 400
    response = client.post(
        "/settings/tokens/", {"label": "x", "scopes": ["memories:read"], "projects": [str(cast.project_b.pk)]}
    )
    assert response.status_code == 400
    assert not ApiToken.objects.filter(label="x").exists()


@pytest.mark.cross_tenant("settings-token-revoke")
def test_revoking_another_orgs_token_is_404(client, cast):
    foreign, _ = token_create(organization=cast.org_b, label="globex ci")
    login(client, cast.alice)
    assert client.post(f"/settings/tokens/{foreign.pk}/revoke/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


@pytest.mark.cross_tenant("settings-usage")
def test_usage_page_sums_this_months_llm_calls_by_purpose(client, cast):
    for org, purpose, tokens_in, tokens_out in (
        (cast.org_a, "distill", 1200, 300),
        (cast.org_a, "synthesize", 500, 50),
        (cast.org_b, "judge", 999_999, 1),
    ):
        LlmCall.objects.create(
            organization=org,
            provider="anthropic",
            model="m",
            purpose=purpose,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
        )
    login(client, cast.bob)
    body = text(client.get("/settings/usage/"))
    assert "Distill session" in body and "Synthesize cluster" in body
    assert "Contradiction judge" not in body  # globex's call
    assert "2,050" in body  # total tokens
    assert "5,000,000" in body  # the pro budget
    assert "4,997,950" in body  # remaining


def test_plan_page_shows_limits_and_owner_changes_the_plan_with_an_audit_event(client, cast):
    login(client, cast.alice)
    body = text(client.get("/settings/plan/"))
    assert "Plan: Pro" in body
    assert "Manual consolidation" in body
    assert "100,000" in body  # memories limit
    assert "Change plan" in body
    response = client.post("/settings/plan/", {"plan": "teams"})
    assert response.status_code == 302
    cast.org_a.refresh_from_db()
    assert cast.org_a.plan == "teams"
    event = AuditEvent.objects.get(organization=cast.org_a, verb="organization.plan_change")
    assert event.data == {"from": "pro", "to": "teams"}
    assert event.actor_user == cast.alice
    response = client.post("/settings/plan/", {"plan": "platinum"})
    assert response.status_code == 400
    assert "unknown plan" in text(response)


def test_an_admin_who_is_not_owner_cannot_change_the_plan(client, cast):
    admin = UserFactory(email="adam@acme.test")
    MembershipFactory(user=admin, organization=cast.org_a, role="admin")
    login(client, admin)
    assert "Only owners change the plan" in text(client.get("/settings/plan/"))
    assert client.post("/settings/plan/", {"plan": "enterprise"}).status_code == 403
    cast.org_a.refresh_from_db()
    assert cast.org_a.plan == "pro"
    assert not AuditEvent.objects.filter(verb="organization.plan_change").exists()
    # but an admin manages tokens
    assert client.post("/settings/tokens/", {"label": "ci", "scopes": ["memories:read"]}).status_code == 200


@pytest.mark.cross_tenant("settings-members", "settings-projects", "settings-tokens", "settings-member-remove")
def test_charlie_cannot_see_acmes_data(client, cast):
    token_create(organization=cast.org_a, label="acme-secret-label")
    login(client, cast.charlie)
    pages = "".join(text(client.get(url)) for url in PAGES)
    assert "alice@acme.test" not in pages
    assert "bob@acme.test" not in pages
    assert "acme-secret-label" not in pages
    assert "web-app" not in pages
    assert "billing" in pages  # globex's own project
    acme_membership = Membership.objects.get(user=cast.bob)
    assert client.post(f"/settings/members/{acme_membership.pk}/remove/").status_code == 404
    assert Membership.objects.filter(pk=acme_membership.pk).exists()


@pytest.mark.cross_tenant("switch-org")
def test_switch_org_to_an_org_you_do_not_belong_to_is_404(client, cast):
    login(client, cast.alice)
    assert client.post("/switch-org/", {"org": "globex"}).status_code == 404
    assert client.post("/switch-org/", {"org": "no-such-org"}).status_code == 404
    assert client.session.get(SESSION_ORG_KEY) is None


def test_switch_org_changes_the_current_org(client, cast):
    MembershipFactory(user=cast.alice, organization=cast.org_b, role="viewer")
    login(client, cast.alice)
    response = client.post("/switch-org/", {"org": "globex", "next": "/settings/projects/"})
    assert response.status_code == 302
    assert response["Location"] == "/settings/projects/"
    assert client.session[SESSION_ORG_KEY] == "globex"
    body = text(client.get("/settings/projects/"))
    assert "billing" in body and "web-app" not in body
    assert "Create a project" not in body  # alice is only a viewer in globex
    # an off-site next falls back to the dashboard
    response = client.post("/switch-org/", {"org": "acme", "next": "https://evil.example/"})
    assert response["Location"] == "/"
    assert client.get("/switch-org/").status_code == 405


def test_a_user_without_an_org_gets_the_no_org_page(client, db):
    OrganizationFactory(slug="lonely")
    user = UserFactory(email="nobody@x.test")
    login(client, user)
    response = client.get("/settings/")
    assert response.status_code == 403
    assert "not a member of any organization" in text(response)


# --- cross-tenant: another org's rows are invisible and untouchable -------------------------------------


@pytest.mark.cross_tenant("settings-teams")
def test_another_orgs_teams_are_not_listed(client, cast):
    acme_team = Team.objects.create(organization=cast.org_a, slug="acme-platform", name="Acme Platform")
    assert "Acme Platform" in text(login(client, cast.alice).get("/settings/teams/"))
    body = text(login(client, cast.charlie).get("/settings/teams/"))
    assert acme_team.name not in body and acme_team.slug not in body


@pytest.mark.cross_tenant("settings-member-role")
def test_changing_the_role_of_another_orgs_member_is_404_and_changes_nothing(client, cast):
    bob_in_acme = Membership.objects.get(user=cast.bob, organization=cast.org_a)
    login(client, cast.charlie)
    assert client.post(f"/settings/members/{bob_in_acme.pk}/role/", {"role": "owner"}).status_code == 404
    bob_in_acme.refresh_from_db()
    assert bob_in_acme.role == "viewer"
    assert not AuditEvent.objects.filter(verb="membership.role_change").exists()


@pytest.mark.cross_tenant("settings-member-invite")
def test_inviting_a_member_of_another_org_adds_them_here_and_leaves_that_org_alone(client, cast):
    login(client, cast.charlie)
    response = client.post("/settings/members/invite/", {"email": "bob@acme.test", "role": "admin"})
    assert response.status_code == 302
    assert Membership.objects.get(user=cast.bob, organization=cast.org_b).role == "admin"
    assert Membership.objects.get(user=cast.bob, organization=cast.org_a).role == "viewer"
    assert not AuditEvent.objects.filter(organization=cast.org_a).exists()
    body = text(client.get("/settings/"))
    assert "bob@acme.test" in body and "alice@acme.test" not in body


@pytest.mark.cross_tenant("settings-plan")
def test_the_plan_page_counts_and_changes_only_the_current_org(client, cast):
    Project.objects.create(organization=cast.org_a, slug="mobile", name="Mobile")
    Project.objects.create(organization=cast.org_a, slug="infra", name="Infra")
    login(client, cast.charlie)
    used = {row["name"]: row["used"] for row in client.get("/settings/plan/").context["limits"]}
    assert used["projects"] == 1 and used["members"] == 1  # globex's, not acme's 3 projects and 2 members
    assert client.post("/settings/plan/", {"plan": "teams"}).status_code == 302
    cast.org_a.refresh_from_db()
    cast.org_b.refresh_from_db()
    assert (cast.org_a.plan, cast.org_b.plan) == ("pro", "teams")
    assert not AuditEvent.objects.filter(organization=cast.org_a, verb="organization.plan_change").exists()
