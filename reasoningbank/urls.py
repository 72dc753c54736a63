from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from reasoningbank.api_errors import api_not_found
from reasoningbank.api_index import api_index

urlpatterns = [
    # the operator's app: /healthz, /readyz, /metrics and the dashboard's /system/ page
    path("", include("system.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    # OAuth 2.1 for remote MCP clients: metadata (/.well-known/...), /oauth/authorize|token|revoke|register
    path("", include("accounts.oauth.urls")),
    path("api/v1/", api_index, name="api-index"),
    path("api/v1/", include("accounts.urls")),
    path("api/v1/", include("memories.urls")),
    path("api/v1/", include("consolidation.urls")),
    path("api/v1/", include("webhooks.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # after every API route: anything else under /api/ is a JSON 404 in the API's error shape
    re_path(r"^api/", api_not_found),
    # SCIM 2.0 provisioning of an org's members and teams by its identity provider (docs/identity.md)
    path("scim/v2/", include("accounts.scim.urls")),
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
