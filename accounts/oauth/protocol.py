"""OAuth 2.1 for remote MCP clients (docs/oauth.md; MCP 2026-07-28 "Authorization"): the shared pieces.

The authorization server is django-oauth-toolkit (``OAUTH2_PROVIDER`` in settings) with our
validator (``accounts/oauth/validator.py``), consent page and connected apps
(``accounts/oauth/views.py``), client metadata fetcher (``accounts/oauth/cimd.py``) and the
connection each token belongs to (``accounts.models.OAuthConnection``). This module holds what
those and the two resource servers (``/mcp``: ``accounts/mcp_auth.py``; REST:
``accounts/tokens/authentication.py``) share: the protected resources' identifiers and metadata URLs, the
``WWW-Authenticate`` challenge, the redirect-URI policy and the token generators.

Two protected resources (RFC 9728), both served by this issuer:

* ``<issuer>/mcp`` — the MCP endpoint; what MCP clients ask for (RFC 8707 ``resource``);
* ``<issuer>/api/v1`` — the REST API.

A token is bound to the resource(s) named when it was authorized (the MCP endpoint when the client
named none) and is refused by the other one.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from accounts.models import SCOPE_CONSOLIDATION_RUN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from reasoningbank import net_guard

# the scopes an app can be granted (never ``admin``)
OAUTH_SCOPES = (SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN)
ACCESS_TOKEN_PREFIX = "rbo_"  # API tokens start with "rb_": the bearer check tells them apart by prefix
REFRESH_TOKEN_PREFIX = "rbr_"

MCP_RESOURCE_PATH = "/mcp"
API_RESOURCE_PATH = "/api/v1"
RESOURCE_PATHS = (MCP_RESOURCE_PATH, API_RESOURCE_PATH)
PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def issuer() -> str:
    return str(settings.OAUTH_ISSUER).rstrip("/")


def resource_identifier(path: str) -> str:
    """The RFC 8707 / RFC 9728 identifier of one of our protected resources."""
    return issuer() + path


def mcp_resource() -> str:
    return resource_identifier(MCP_RESOURCE_PATH)


def api_resource() -> str:
    return resource_identifier(API_RESOURCE_PATH)


def known_resources() -> tuple[str, ...]:
    return tuple(resource_identifier(path) for path in RESOURCE_PATHS)


def canonical_resource(value: str) -> str:
    """A requested resource in the form we compare (scheme and host lower-cased, no trailing slash,
    default port dropped); unknown shapes come back unchanged (and then match nothing)."""
    try:
        parts = urlsplit(value.strip())
        scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return value
    if not scheme or not host or parts.username or parts.password or parts.fragment or parts.query:
        return value
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port is None or port == default else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def resource_known(value: str) -> str | None:
    """The identifier of ours that ``value`` names, or None (a resource this server does not serve)."""
    wanted = canonical_resource(value)
    for known in known_resources():
        if canonical_resource(known) == wanted:
            return known
    return None


def resource_metadata_url(path: str) -> str:
    """Where a resource's Protected Resource Metadata lives (RFC 9728 §3.1, path form)."""
    return issuer() + PRM_WELL_KNOWN + path


def bearer_challenge(
    *,
    realm: str,
    resource_path: str,
    error: str | None = None,
    description: str = "",
    scopes: Sequence[str] = OAUTH_SCOPES,
) -> str:
    """``WWW-Authenticate`` for a 401, or a 403 with ``error="insufficient_scope"`` and the scope that
    is missing (MCP 2026-07-28 "Authorization"; RFC 6750 section 3, RFC 9728 section 5.1): the metadata to
    discover the authorization server from, the scopes the resource uses, and what went wrong in
    words (``error_description``, so that a client showing only headers can still say why). A
    request that sent no token gets no ``error`` (RFC 6750 section 3.1)."""
    params = [f'realm="{realm}"']
    if error:
        params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{challenge_description(description)}"')
    params.append(f'resource_metadata="{resource_metadata_url(resource_path)}"')
    params.append(f'scope="{" ".join(scopes)}"')
    return "Bearer " + ", ".join(params)


def challenge_description(text: str) -> str:
    """``text`` as RFC 6750 allows an ``error_description``: printable ASCII without ``"`` and ``\\``
    (a quote becomes an apostrophe, anything else outside the set a question mark)."""
    text = text.replace('"', "'").replace("\\", "/")
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text)


# --- token values (django-oauth-toolkit's ACCESS_TOKEN_GENERATOR / REFRESH_TOKEN_GENERATOR) --------


def access_token_generator(request: Any, refresh_token: bool = False) -> str:
    """32 random bytes, prefixed so that a leaked token is recognisable (and never mistaken for an API
    token); stored only as its SHA-256 digest (``COMPLIANT_BCP_RFC9700_TOKEN_STORAGE``)."""
    return ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)


def refresh_token_generator(request: Any, refresh_token: bool = False) -> str:
    return REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(32)


# --- redirect URIs ----------------------------------------------------------------------------------

LOOPBACK_HOSTS = {"localhost"}


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI under this server's policy, or None when it may:
    one of ``OAUTH_REDIRECT_SCHEMES`` (https by default, or a native app's private-use scheme), or
    ``http`` to a loopback address (any port) while ``OAUTH_LOOPBACK_REDIRECTS`` is on."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "is not a URI"
    scheme = parts.scheme.lower()
    if not scheme:
        return "has no scheme"
    if "#" in uri:
        return "has a fragment"
    if scheme == "http":
        if settings.OAUTH_LOOPBACK_REDIRECTS and is_loopback_host(parts.hostname):
            return None
        return "uses http to a host that is not a loopback address (use https)"
    if scheme not in settings.OAUTH_REDIRECT_SCHEMES:
        return f"uses the scheme {scheme!r}, which this server does not allow"
    if scheme == "https" and not parts.hostname:
        return "has no host"
    return None


# --- client metadata (Dynamic Client Registration, client metadata documents) -----------------------

# one client has a few callbacks (a native app's loopback and private-use scheme, a web app's pages);
# registration is open to anyone, so the list is bounded like every other list the service stores
REDIRECT_URIS_MAX = 10
CLIENT_URI_MAX_LENGTH = 2000

# RFC 7591 section 2: URLs of web pages and keys about the client. Nothing fetches or shows them today,
# but a registration is a promise about the client, and a ``javascript:`` or ``data:`` "home page" is
# never one a consent page or an admin should be handed, nor a page or key set on the service's own
# network, which a later fetch or an admin's browser would reach from inside: https, and a host on
# public addresses (docs/security/address-guard.md).
CLIENT_METADATA_URI_FIELDS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")


def redirect_uris_problem(uris: Any) -> str | None:
    """Why the list of redirect URIs is too long, or one of them too long, as a sentence, or None."""
    if not isinstance(uris, list):
        return None  # the library refuses a value that is not a list
    if len(uris) > REDIRECT_URIS_MAX:
        return f"redirect_uris: at most {REDIRECT_URIS_MAX} redirect URIs per client (got {len(uris)})"
    if any(isinstance(uri, str) and len(uri) > CLIENT_URI_MAX_LENGTH for uri in uris):
        return f"redirect_uris: a redirect URI has at most {CLIENT_URI_MAX_LENGTH} characters"
    return None


def _host_problem(hostname: str, port: int) -> str | None:
    try:
        net_guard.host_addresses_checked(
            hostname, port, allow_private=bool(settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES)
        )
    except net_guard.AddressRefused as exc:
        return f"must name a host on public addresses ({exc})"
    return None


def metadata_uri_problem(uri: Any, *, hosts_checked: dict[tuple[str, int], str | None] | None = None) -> str | None:
    """Why ``uri`` may not be one of the client's web page URLs, or None when it may: https, a host
    that is (or resolves to) public addresses only. ``hosts_checked`` keeps the answers of one
    registration, so that five URLs on one host are resolved once."""
    if not isinstance(uri, str):
        return "must be a string"
    if len(uri) > CLIENT_URI_MAX_LENGTH:
        return f"must have at most {CLIENT_URI_MAX_LENGTH} characters"
    try:
        parts = urlsplit(uri)
        port = parts.port or 443
    except ValueError:
        return "is not a URI"
    if parts.scheme.lower() != "https":
        return "must be an https URL"
    if not parts.hostname or any(char.isspace() for char in uri):
        return "must be an https URL with a host"
    if parts.username or parts.password:
        return "must not hold a user name or password"
    checked = {} if hosts_checked is None else hosts_checked
    key = (parts.hostname, port)
    if key not in checked:
        checked[key] = _host_problem(parts.hostname, port)
    return checked[key]


def client_metadata_uris_problem(data: dict[str, Any]) -> str | None:
    """The first web page URL of the metadata this server refuses, as a sentence, or None."""
    hosts_checked: dict[tuple[str, int], str | None] = {}
    for name in CLIENT_METADATA_URI_FIELDS:
        if name in data and data[name] is not None:
            problem = metadata_uri_problem(data[name], hosts_checked=hosts_checked)
            if problem:
                return f"{name}: {problem}"
    return None


def client_metadata_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    """(RFC 7591 error code, description) for registration metadata this server refuses, or None:
    only the authorization code grant (and refresh tokens) and the ``code`` response type, at most
    ``REDIRECT_URIS_MAX`` redirect URIs, each under ``redirect_uri_problem``, web page URLs under
    ``metadata_uri_problem``."""
    grant_types = data.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list) and any(
        grant not in ("authorization_code", "refresh_token") for grant in grant_types
    ):
        return "invalid_client_metadata", "grant_types: only authorization_code (and refresh_token) are supported"
    response_types = data.get("response_types", ["code"])
    if isinstance(response_types, list) and any(kind != "code" for kind in response_types):
        return "invalid_client_metadata", "response_types: only code is supported"
    uris = data.get("redirect_uris")
    too_many = redirect_uris_problem(uris)
    if too_many:
        return "invalid_redirect_uri", too_many
    if isinstance(uris, list):
        for uri in uris:
            problem = redirect_uri_problem(uri) if isinstance(uri, str) else "is not a string"
            if problem:
                return "invalid_redirect_uri", f"redirect URI {uri!r} {problem}"
    uri_problem = client_metadata_uris_problem(data)
    if uri_problem:
        return "invalid_client_metadata", uri_problem
    return None
