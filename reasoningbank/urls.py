from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.api import MeView, ProjectListView
from accounts.api_spend import BudgetView, SpendView
from accounts.api_write_limits import ConnectedAppUnsuspendView, TokenUnsuspendView, WriteSuspensionListView
from reasoningbank.api_errors import api_not_found
from reasoningbank.api_index import api_index

api_v1 = [
    path("", api_index, name="api-index"),
    path("me", MeView.as_view(), name="api-me"),
    path("projects", ProjectListView.as_view(), name="api-projects"),
    path("llm/budget", BudgetView.as_view(), name="api-llm-budget"),
    path("llm/spend", SpendView.as_view(), name="api-llm-spend"),
    path("write-suspensions", WriteSuspensionListView.as_view(), name="api-write-suspensions"),
    path("tokens/<str:token_id>/unsuspend", TokenUnsuspendView.as_view(), name="api-token-unsuspend"),
    path(
        "connected-apps/<str:connection_id>/unsuspend",
        ConnectedAppUnsuspendView.as_view(),
        name="api-connected-app-unsuspend",
    ),
]

urlpatterns = [
    # the operator's app: /healthz, /readyz, /metrics and the dashboard's /system/ page
    path("", include("system.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    # OAuth 2.1 for remote MCP clients: metadata (/.well-known/...), /oauth/authorize|token|revoke|register
    path("", include("accounts.urls_oauth")),
    path("api/v1/", include(api_v1)),
    path("api/v1/", include("memories.urls")),
    path("api/v1/", include("consolidation.urls")),
    path("api/v1/", include("webhooks.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # after every API route: anything else under /api/ is a JSON 404 in the API's error shape
    re_path(r"^api/", api_not_found),
    # dashboard (login required); each app owns its pages
    path("", include("accounts.urls_dashboard")),
    path("", include("memories.urls_dashboard")),
    path("", include("consolidation.urls_dashboard")),
    path("", include("webhooks.urls_dashboard")),
]

# a 500, a suspicious request, an unknown URL or a refusal under /api/, /oauth/, /.well-known/ or /mcp
# answers JSON in the error shape (docs/security/http-hardening.md#one-error-shape); pages keep Django's
handler500 = "reasoningbank.api_errors.server_error"
handler400 = "reasoningbank.api_errors.bad_request"
handler404 = "reasoningbank.api_errors.not_found"
handler403 = "reasoningbank.api_errors.permission_denied"
