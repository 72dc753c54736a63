"""Client ID Metadata Documents (the registration MCP 2026-07-28 prefers), fetched under limits.

A client may name itself by an ``https`` URL; on first sight the authorization server fetches that
document (django-oauth-toolkit's ``oauth2_provider.cimd``: the document's ``client_id`` must be
its own URL, public clients only, a per-URL failure backoff and a cap on fetches in flight) and
keeps it as an ``Application``. This module is the fetch itself, restricted:

* ``https`` only — ``http`` only while ``OAUTH_CIMD_ALLOW_HTTP`` is on (development);
* the host must resolve to public addresses only (every address it resolves to is checked, and the
  connection goes to the checked address, so a second lookup cannot rebind it) — private,
  loopback, link-local and other internal ranges only while ``OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES``
  is on (development);
* no redirects, one deadline for the whole fetch (``OAUTH_CIMD_FETCH_TIMEOUT``), at most
  ``OAUTH_CIMD_MAX_BYTES`` read, a JSON object only.

Any failure makes the client unknown (``invalid_client``); nothing is stored.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any
from urllib.parse import SplitResult, urlsplit

import urllib3
from django.conf import settings
from django.core.cache import cache
from oauth2_provider import cimd
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher

from accounts.oauth.protocol import client_metadata_uris_problem, redirect_uris_problem
from reasoningbank import net_guard
from reasoningbank.json_limits import json_depth_exceeds, json_nul_field


def _validate_url(client_id: str) -> SplitResult:
    parts = urlsplit(client_id)
    allowed = ("https", "http") if settings.OAUTH_CIMD_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed:
        raise CIMDError("client_id URL must use https")
    if not parts.hostname:
        raise CIMDError("client_id URL must contain a host")
    try:
        _ = parts.port
    except ValueError as exc:
        raise CIMDError("client_id URL has an invalid port") from exc
    if parts.username or parts.password or parts.fragment:
        raise CIMDError("client_id URL must not contain userinfo or a fragment")
    if not parts.path or parts.path == "/":
        raise CIMDError("client_id URL must contain a path component")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise CIMDError("client_id URL must not contain dot path segments")
    return parts


def address_allowed(ip: str) -> bool:
    """A public address always; an internal one (private, loopback, link-local, ...) only while
    ``OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES`` is on; never the unspecified or a multicast address
    (the rule shared with webhook deliveries: ``reasoningbank.net_guard``)."""
    return net_guard.address_allowed(ip, allow_private=bool(settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES))


def resolve_addresses(hostname: str, port: int) -> list[str]:
    """Every address ``hostname`` resolves to, all of them allowed, or CIMDError (one internal address
    refuses the whole host, so a split answer cannot smuggle a connection inside)."""
    try:
        return net_guard.host_addresses_checked(
            hostname, port, allow_private=bool(settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES)
        )
    except net_guard.AddressRefused as exc:
        raise CIMDError(f"client_id {exc}") from exc


class RestrictedMetadataFetcher(SafeMetadataFetcher):
    """``CIMD_METADATA_FETCHER``: django-oauth-toolkit's hardened fetch, with this service's
    development switches (http, internal addresses) and its own size and time limits. The document is
    held to the registration policy too: nested no deeper than ``JSON_MAX_DEPTH``, no NUL anywhere
    (PostgreSQL cannot store it), at most ``REDIRECT_URIS_MAX`` redirect URIs, web page URLs https on
    public addresses (``accounts.oauth.client_metadata_uris_problem``)."""

    def _read_document(self, response: Any) -> tuple[dict[str, Any], int]:
        try:
            document, max_age = super()._read_document(response)
        except RecursionError:  # nested too deeply for the parser: refused like any unusable document
            raise CIMDError("client_id document is nested too deeply") from None
        if json_depth_exceeds(json.dumps(document), int(settings.JSON_MAX_DEPTH)):
            raise CIMDError("client_id document is nested too deeply")
        if json_nul_field(document) is not None:
            raise CIMDError("client_id document holds a NUL character")
        problem = redirect_uris_problem(document.get("redirect_uris")) or client_metadata_uris_problem(document)
        if problem:
            raise CIMDError(f"client_id document: {problem}")
        return document, max_age

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        parts = _validate_url(client_id)
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        assert parts.hostname is not None
        ips = resolve_addresses(parts.hostname, port)
        timeout = float(settings.OAUTH_CIMD_FETCH_TIMEOUT)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = {"Host": parts.netloc, "Accept": "application/json, application/*+json"}
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        for ip in ips:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            limits = urllib3.Timeout(connect=remaining, read=remaining, total=remaining)
            pool: urllib3.HTTPConnectionPool
            if https:
                pool = urllib3.HTTPSConnectionPool(
                    host=ip,
                    port=port,
                    timeout=limits,
                    retries=False,
                    maxsize=1,
                    ssl_context=ssl.create_default_context(),
                    server_hostname=parts.hostname,
                )
            else:
                pool = urllib3.HTTPConnectionPool(host=ip, port=port, timeout=limits, retries=False, maxsize=1)
            try:
                response = pool.urlopen("GET", path, headers=headers, redirect=False, preload_content=False)
                try:
                    document, max_age = self._read_document(response)
                    return document, int(max_age)
                finally:
                    response.release_conn()
            except urllib3.exceptions.HTTPError as exc:
                last_error = exc
            finally:
                pool.close()
        raise CIMDError(f"could not fetch client_id document: {last_error or 'timed out'}")


def resolve_http_client_id(client_id: str, request: Any) -> Any:
    """The development-only path for ``http://`` client ids (``OAUTH_CIMD_ALLOW_HTTP``), which the
    library's resolver (https only) skips: the same permission check, backoff, in-flight cap,
    fetch, validation and upsert. None when off, or when the document cannot be used."""
    from oauth2_provider.settings import oauth2_settings

    if not (oauth2_settings.CIMD_ENABLED and settings.OAUTH_CIMD_ALLOW_HTTP):
        return None
    if not client_id or client_id[:7].lower() != "http://" or not cimd._registration_permitted(request, client_id):
        return None
    backoff_key = cimd._backoff_cache_key(client_id)
    if cache.get(backoff_key):
        return None
    with cimd._fetch_slot() as acquired:
        if not acquired:
            return None
        try:
            application = cimd._fetch_validate_upsert(client_id)
        except Exception:  # an unusable document makes an unknown client, never a 500
            cache.set(backoff_key, True, oauth2_settings.CIMD_FAILURE_BACKOFF_SECONDS)
            return None
    return application if application.is_usable(request) else None
