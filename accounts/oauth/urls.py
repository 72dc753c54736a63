"""OAuth 2.1 routes (docs/oauth.md), mounted at the site root. The namespace is django-oauth-toolkit's
(``oauth2_provider``), whose metadata and registration views reverse these names; only the routes
this service uses are mounted (no application-management pages, no introspection, no OIDC). The
endpoints a client fetches are open to browser-based clients at any origin (``cors_open``; the
metadata views set the header themselves). Every error answer but the authorization page's is JSON
in the one error shape (``oauth_json_errors``; docs/security/http-hardening.md), unknown paths under
``/oauth/`` and ``/.well-known/`` included."""

from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views as dot_views

from accounts.oauth import views as views_oauth
from accounts.oauth.protocol import API_RESOURCE_PATH, MCP_RESOURCE_PATH
from accounts.oauth.views import cors_open, oauth_json_errors

app_name = "oauth2_provider"

urlpatterns = [
    # RFC 8414 (issuer without a path: the document lives at the origin's well-known URI)
    # the metadata documents are public and read-only: no CSRF check, so a POST is a JSON 405, never
    # Django's CSRF page
    path(
        ".well-known/oauth-authorization-server",
        csrf_exempt(oauth_json_errors(views_oauth.ServerMetadataView.as_view())),
        name="oauth-server-metadata",
    ),
    # RFC 9728, path form: the metadata of <issuer>/mcp and of <issuer>/api/v1
    path(
        ".well-known/oauth-protected-resource/mcp",
        csrf_exempt(
            oauth_json_errors(views_oauth.ProtectedResourceMetadataView.as_view(resource_path=MCP_RESOURCE_PATH))
        ),
        name="oauth-resource-metadata-mcp",
    ),
    path(
        ".well-known/oauth-protected-resource/api/v1",
        csrf_exempt(
            oauth_json_errors(views_oauth.ProtectedResourceMetadataView.as_view(resource_path=API_RESOURCE_PATH))
        ),
        name="oauth-resource-metadata-api",
    ),
    path("oauth/authorize/", views_oauth.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", cors_open(oauth_json_errors(views_oauth.JsonTokenView.as_view())), name="token"),
    path("oauth/revoke/", cors_open(oauth_json_errors(dot_views.RevokeTokenView.as_view())), name="revoke-token"),
    path("oauth/register/", cors_open(oauth_json_errors(views_oauth.RegistrationView.as_view())), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        oauth_json_errors(views_oauth.RegistrationManagementView.as_view()),
        name="dcr-register-management",
    ),
    # after every OAuth route: anything else under /oauth/ or /.well-known/ is a JSON 404 in the error shape
    re_path(r"^oauth/", csrf_exempt(views_oauth.oauth_not_found), name="oauth-not-found"),
    re_path(r"^\.well-known/", csrf_exempt(views_oauth.oauth_not_found), name="well-known-not-found"),
]
