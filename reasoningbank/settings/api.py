"""The REST API (Django REST framework) and its OpenAPI schema (drf-spectacular)."""

from __future__ import annotations

# --- REST API --------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.tokens.authentication.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # every REST list is paged this way (accounts/api_base.py's OrgAPIView reads it)
    "DEFAULT_PAGINATION_CLASS": "reasoningbank.pagination.Pagination",
    # JSON bodies only: a form-encoded body is a 415, not a silently mis-typed boolean (the import endpoint
    # alone takes JSON Lines too)
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "reasoningbank.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # agent-facing text without terminal escapes or bidi controls (docs/agent-api.md)
    "DEFAULT_RENDERER_CLASSES": [
        "reasoningbank.renderers.AgentJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ReasoningBank API",
    "DESCRIPTION": (
        "Memory service for AI coding agents: record what an agent learned, search it before a task, say "
        "whether it helped, and let consolidation merge, supersede and retire memories over time.\n\n"
        "Authenticate with `Authorization: Bearer rb_...` (an organization's API token). Request bodies are "
        "JSON objects and may hold only the documented fields. Every list is paged "
        "(`page`, `page_size` → `{count, next, previous, results}`). Every error answers "
        '`{"detail": str, "code": str, "errors": {field: [str, ...]}}`.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",  # vendored assets, never a CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "ENUM_NAME_OVERRIDES": {
        "MemoryOutcomeEnum": "memories.validation.RECORD_OUTCOMES",
        "MemoryScopeEnum": "memories.validation.WRITE_SCOPES",
        "ArchiveReasonEnum": "memories.core.serializers.ARCHIVE_REASON_CHOICES",
        "SessionStatusEnum": "memories.sessions.selectors.STATUSES",
        "RunStatusEnum": "consolidation.api.RUN_STATUSES",
        "WebhookDeliveryStatusEnum": "webhooks.api.DELIVERY_STATUSES",
        "WebhookEventEnum": "webhooks.api.EVENT_NAMES",
        "WebhookHealthEnum": "webhooks.policy.HEALTHS",
    },
    "TAGS": [
        {"name": "memories", "description": "Record, search, rate, edit, archive and restore memories."},
        {"name": "sessions", "description": "Hand in finished agent sessions to distill memories from them."},
        {"name": "consolidation", "description": "Consolidation runs, contradictions awaiting a moderator, un-merge."},
        {"name": "quarantine", "description": "Memories and summaries the instruction-smell detector held (admins)."},
        {"name": "account", "description": "The calling token and the projects it reaches."},
        {"name": "webhooks", "description": "Signed notifications of the bank's events to an https URL (admins)."},
    ],
}
