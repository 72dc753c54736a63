"""``GET /api/v1/``: the REST API's front door, a small JSON document naming where its documentation and
schema are, how to authenticate and its main resources (run.sh's banner links it; docs/agent-api.md
says what each does). The same for everybody: it reads nothing, so it needs no token."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

# the main resources, by URL route name (the schema at /api/schema/ lists every operation)
RESOURCES = {
    "me": "api-me",
    "projects": "api-projects",
    "memories": "api-memories",
    "memory_search": "api-memory-search",
    "memory_context": "api-memory-context",
    "sessions": "api-sessions",
    "export": "api-export",
    "import": "api-import",
    "consolidation_runs": "api-consolidation-runs",
}


@csrf_exempt  # like every API view: a POST here is a 405, not the CSRF page
@require_safe
def api_index(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {
            "name": "ReasoningBank REST API",
            "version": "v1",
            "docs": reverse("api-docs"),
            "schema": reverse("api-schema"),
            "authentication": "Authorization: Bearer <token> (manage.py create_token, or the dashboard's tokens page)",
            "mcp": "/mcp",
            "resources": {name: reverse(route) for name, route in RESOURCES.items()},
        }
    )
