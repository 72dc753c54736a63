"""OAuth 2.1 for remote MCP clients (django-oauth-toolkit)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_duration, env_int, env_list, env_str
from reasoningbank.settings.base import SITE_URL

# --- OAuth 2.1 for remote MCP clients (docs/oauth.md: accounts/oauth*.py on django-oauth-toolkit) ----
# The authorization server's issuer (RFC 8414 / RFC 9207 `iss`) and the base of the two protected
# resources' identifiers, `<issuer>/mcp` and `<issuer>/api/v1`: the public URL clients reach.
OAUTH_ISSUER = env_str("OAUTH_ISSUER", SITE_URL).rstrip("/")
if not OAUTH_ISSUER.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"OAUTH_ISSUER must be an http(s):// URL, got {OAUTH_ISSUER!r}")
OAUTH_ACCESS_TOKEN_LIFETIME = env_duration("OAUTH_ACCESS_TOKEN_LIFETIME", "1h")
OAUTH_REFRESH_TOKEN_LIFETIME = env_duration("OAUTH_REFRESH_TOKEN_LIFETIME", "30d")
OAUTH_AUTHORIZATION_CODE_LIFETIME = env_duration("OAUTH_AUTHORIZATION_CODE_LIFETIME", "1m")
# Redirect URIs: these schemes (https, plus private-use schemes of native apps such as `cursor`), and
# http only to a loopback address on any port (CLI clients, RFC 8252 §7.3) while that is on.
OAUTH_REDIRECT_SCHEMES = [scheme.lower() for scheme in env_list("OAUTH_REDIRECT_SCHEMES", ["https"])]
if "http" in OAUTH_REDIRECT_SCHEMES:
    raise ImproperlyConfigured("OAUTH_REDIRECT_SCHEMES may not hold http: http is allowed to loopback addresses only")
OAUTH_LOOPBACK_REDIRECTS = env_bool("OAUTH_LOOPBACK_REDIRECTS", True)
OAUTH_DCR_ENABLED = env_bool("OAUTH_DCR_ENABLED", True)
# registrations one client address may make within the window (open registration: accounts/throttling.py)
OAUTH_DCR_RATE_LIMIT = env_int("OAUTH_DCR_RATE_LIMIT", 20, minimum=1)
OAUTH_DCR_RATE_WINDOW = env_duration("OAUTH_DCR_RATE_WINDOW", "1h")
OAUTH_CIMD_ENABLED = env_bool("OAUTH_CIMD_ENABLED", True)
# development only: client metadata documents over http, and at private/loopback addresses
OAUTH_CIMD_ALLOW_HTTP = env_bool("OAUTH_CIMD_ALLOW_HTTP", False)
OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES = env_bool("OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES", False)
OAUTH_CIMD_FETCH_TIMEOUT = env_duration("OAUTH_CIMD_FETCH_TIMEOUT", "5s")
OAUTH_CIMD_MAX_BYTES = env_int("OAUTH_CIMD_MAX_BYTES", 16 * 1024, minimum=1024, maximum=1024 * 1024)
# django-oauth-toolkit's own models (named here because accounts' OAuthConnection refers to them)
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER = {
    # the OAuth scopes are the token scopes an agent needs; `admin` is never granted to an app
    "SCOPES": {
        "memories:read": "Search and read memories",
        "memories:write": "Record memories, feedback, outcomes and sessions",
        "consolidation:run": "Request consolidation runs",
    },
    "DEFAULT_SCOPES": ["memories:read", "memories:write", "consolidation:run"],
    "OAUTH2_VALIDATOR_CLASS": "accounts.oauth.validator.OAuthValidator",
    "ACCESS_TOKEN_GENERATOR": "accounts.oauth.protocol.access_token_generator",
    "REFRESH_TOKEN_GENERATOR": "accounts.oauth.protocol.refresh_token_generator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(OAUTH_ACCESS_TOKEN_LIFETIME),
    "REFRESH_TOKEN_EXPIRE_SECONDS": int(OAUTH_REFRESH_TOKEN_LIFETIME),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": int(OAUTH_AUTHORIZATION_CODE_LIFETIME),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,  # a replayed rotated refresh token revokes its family
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": [*OAUTH_REDIRECT_SCHEMES, *(["http"] if OAUTH_LOOPBACK_REDIRECTS else [])],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OIDC_ISS_ENDPOINT": OAUTH_ISSUER,
    "REQUEST_APPROVAL_PROMPT": "force",  # every authorization shows the consent page
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # RFC 9700 (OAuth security BCP): no implicit or password grant, PKCE S256 only, no tokens in
    # query strings, `iss` in the authorization response (RFC 9207), tokens stored as digests
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    # http stays in the scheme list for loopback redirects; accounts/oauth/protocol.py refuses any other http host
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": False,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "DCR_ENABLED": OAUTH_DCR_ENABLED,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": OAUTH_CIMD_ENABLED,
    "CIMD_METADATA_FETCHER": "accounts.oauth.cimd.RestrictedMetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": OAUTH_CIMD_FETCH_TIMEOUT,
    "CIMD_MAX_DOCUMENT_SIZE": OAUTH_CIMD_MAX_BYTES,
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [OAUTH_ISSUER],
}
