"""Every request the service makes to an organization's identity provider (OIDC discovery, token,
userinfo and keys through allauth; a SAML metadata URL when it is saved) goes to a globally reachable
address only: an admin of one tenant names the URL, so it must not reach the service's own network
(the address guard, ``reasoningbank.net_guard``, docs/security/address-guard.md). ``SSO_ALLOW_PRIVATE_ADDRESSES``
lifts it for a provider on loopback or a private network (development, the tests, an on-premises IdP)."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings

from reasoningbank import net_guard
from reasoningbank.errors import InvalidInput

METADATA_MAX_BYTES = 1_048_576


def _host_check(url: str) -> None:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        net_guard.host_addresses_checked(
            parts.hostname or "", port, allow_private=bool(settings.SSO_ALLOW_PRIVATE_ADDRESSES)
        )
    except net_guard.AddressRefused as exc:
        # allauth turns a failed request into its "sign-in failed" page
        raise requests.exceptions.ConnectionError(f"identity provider address refused: {exc}") from None


def guarded_session(timeout: float) -> requests.Session:
    """A requests session whose every request is refused unless its host is allowed."""
    session = requests.Session()
    send = functools.partial(session.request, timeout=timeout)

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:
        _host_check(url)
        return send(method, url, *args, **kwargs)

    session.request = request  # type: ignore[method-assign, assignment]
    return session


def metadata_fetch(url: str) -> str:
    """A SAML IdP's metadata document, read once when the admin saves it (never at sign-in)."""
    try:
        with guarded_session(timeout=float(settings.SOCIALACCOUNT_REQUESTS_TIMEOUT)) as session:
            response = session.get(url, stream=True, allow_redirects=False)
            response.raise_for_status()
            body = response.raw.read(METADATA_MAX_BYTES + 1, decode_content=True)
    except requests.RequestException as exc:
        raise InvalidInput(f"the metadata could not be read from {url}: {exc}", field="metadata_url") from None
    if len(body) > METADATA_MAX_BYTES:
        raise InvalidInput("the metadata is larger than 1 MiB", field="metadata_url")
    return body.decode("utf-8", "replace")
