"""Settings → API tokens: the list, creating one (its raw value and the ready-to-paste client
configuration shown once) and revoking one. Admins change them; everyone in the org reads the list."""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.access import access_filter, access_get, principal_for_token, reachable_projects
from accounts.models import DEFAULT_TOKEN_SCOPES, SCOPE_HELP, TOKEN_SCOPES, ApiToken, Project
from accounts.oauth.protocol import mcp_resource
from accounts.tokens.selectors import tokens_of_org
from accounts.tokens.services import token_create, token_revoke
from accounts.views_base import ADMIN, errors_of, org_view, require_role, settings_context
from reasoningbank.errors import InvalidInput, ServiceError


def _parse_expiry(value: str) -> datetime | None:
    """A date from the form → the end of that day (the token works through it)."""
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidInput("expiry must be a date (YYYY-MM-DD)", field="expires") from None
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


# the one name of the token's environment variable, which every plugin, hook and SDK reads
# (docs/connecting-agents.md)
TOKEN_ENV = "REASONINGBANK_TOKEN"
# the Claude Code plugin's install (docs/claude-code.md#install): its marketplace is a clone of this repository
PLUGIN_COMMANDS = "/plugin marketplace add /path/to/reasoningbank\n/plugin install reasoningbank@reasoningbank"


def mcp_snippets(raw: str) -> dict[str, str]:
    """Ready-to-paste client configuration for a new token: the Claude Code plugin first (it captures
    and recalls on its own, docs/claude-code.md), then each other client's MCP entry
    (docs/connecting-agents.md#other-agents)."""
    site = settings.SITE_URL.rstrip("/")
    url = site + "/mcp"
    header = {"Authorization": f"Bearer {raw}"}
    config = {"mcpServers": {"reasoningbank": {"type": "http", "url": url, "headers": header}}}
    env_header = {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
    cursor_header = {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}
    return {
        "mcp_url": url,
        "plugin_env": f"export REASONINGBANK_URL={site}\nexport {TOKEN_ENV}={raw}",
        "plugin_commands": PLUGIN_COMMANDS,
        "claude_command": f'claude mcp add --transport http reasoningbank {url} --header "Authorization: Bearer {raw}"',
        "mcp_json": json.dumps(config, indent=2),
        # Codex reads the token from the environment by name: the file never holds it
        "codex_toml": (
            f"export {TOKEN_ENV}={raw}\n\n# ~/.codex/config.toml\n[mcp_servers.reasoningbank]\n"
            f'url = "{url}"\nbearer_token_env_var = "{TOKEN_ENV}"'
        ),
        # Cursor and Gemini CLI fill the token in from the environment (the plugin's export above): one
        # variable name for every client, and a config file that never holds the secret
        "cursor_json": json.dumps({"mcpServers": {"reasoningbank": {"url": url, "headers": cursor_header}}}, indent=2),
        "gemini_json": json.dumps({"mcpServers": {"reasoningbank": {"httpUrl": url, "headers": env_header}}}, indent=2),
    }


def oauth_command() -> str:
    """``claude mcp add`` without a header: the client signs in through the browser (OAuth) instead
    of holding a pasted token. The URL is the MCP resource OAuth tokens are bound to."""
    return f"claude mcp add --transport http reasoningbank {mcp_resource()}"


def _tokens_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(access_filter(Project, principal).order_by("slug"))
    extra.setdefault("values", {"scopes": list(DEFAULT_TOKEN_SCOPES)})
    context = settings_context(
        request,
        "tokens",
        tokens=tokens_of_org(organization=principal.organization),
        projects=projects,
        scope_choices=[(scope, SCOPE_HELP.get(scope, "")) for scope in TOKEN_SCOPES],
        now=timezone.now(),
        min_expiry=(timezone.localdate() + timedelta(days=1)).isoformat(),
        oauth_command=oauth_command(),
        **extra,
    )
    response = render(request, "accounts/settings_tokens.html", context, status=status)
    if "raw_token" in extra:
        response["Cache-Control"] = "no-store"  # the raw token is shown once and never cached
    return response


@org_view()
def settings_tokens(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _tokens_page(request)
    require_role(request, ADMIN)
    principal = request.principal  # type: ignore[attr-defined]
    values: dict[str, Any] = {
        "label": request.POST.get("label", "").strip(),
        "scopes": request.POST.getlist("scopes"),
        "projects": request.POST.getlist("projects"),
        "expires": request.POST.get("expires", "").strip(),
    }
    try:
        wanted = {value for value in values["projects"] if value}
        projects = [p for p in access_filter(Project, principal) if str(p.pk) in wanted]
        if len(projects) != len(wanted):
            raise InvalidInput("choose projects of this organization", field="projects")
        token, raw = token_create(
            organization=principal.organization,
            label=values["label"],
            scopes=values["scopes"],
            projects=projects,
            expires_at=_parse_expiry(values["expires"]),
            created_by=request.user,
            actor=principal,
        )
    except ServiceError as exc:
        return _tokens_page(request, status=400, errors=errors_of(exc), values=values)
    # the projects an agent with this token writes to: one is used without naming it, several need
    # `project`, none means the agent's first memory_record would fail (create a project first)
    reached = list(reachable_projects(principal_for_token(token)).order_by("slug").values_list("slug", flat=True))
    shown: dict[str, Any] = {"created": token, "raw_token": raw, "token_projects": reached, **mcp_snippets(raw)}
    return _tokens_page(request, **shown)


@require_POST
@org_view(min_role=ADMIN)
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    token = access_get(ApiToken, principal, pk=token_id)
    token_revoke(token=token, actor=principal)
    messages.success(request, f"Token {token.prefix}… ({token.label}) was revoked.")
    return redirect("settings-tokens")
