"""Which addresses the service may connect to on a user's behalf (server-side request forgery).

Two features fetch or post to a URL a tenant chose: the OAuth client metadata fetch
(``accounts/oauth_cimd.py``) and webhook deliveries (``webhooks/``). Both resolve the host first,
refuse it when any of its addresses is internal — private, loopback, link-local (the cloud metadata
address 169.254.169.254), carrier-grade NAT, reserved — and then connect to the address they checked,
so a second DNS answer cannot rebind the connection inside. Each feature has its own development
switch that allows internal addresses (``OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES``,
``WEBHOOKS_ALLOW_PRIVATE_ADDRESSES``); the unspecified and multicast addresses are refused even then.

No Django settings are read here: the switch is an argument (the library check it builds on is
django-oauth-toolkit's, so the module is not in the Django-free list).
"""

from __future__ import annotations

import ipaddress
import socket

# django-oauth-toolkit's check decodes the IPv4 address embedded in IPv6 forms (mapped, 6to4, Teredo,
# NAT64) that ``ipaddress.is_global`` can misjudge; one well-tested rule for both features
from oauth2_provider.cimd import _ip_is_public as _library_ip_is_public


class AddressRefused(Exception):
    """The host cannot be reached safely: it does not resolve, or resolves to an internal address."""


def address_allowed(ip: str, *, allow_private: bool) -> bool:
    """A public address always; an internal one only when ``allow_private``; never the unspecified
    (0.0.0.0, ::) or a multicast address."""
    try:
        address = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return False
    if address.is_unspecified or address.is_multicast:
        return False
    if _library_ip_is_public(ip):
        return True
    return allow_private


def host_addresses_checked(hostname: str, port: int, *, allow_private: bool) -> list[str]:
    """Every address ``hostname`` resolves to (in order, without repeats), all of them allowed, or
    ``AddressRefused``: one internal address refuses the whole host, so a split answer cannot smuggle
    a connection inside. Connect to one of these addresses, not to the name."""
    try:
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"could not resolve host {hostname!r}: {exc}") from exc
    ips: list[str] = []
    for info in infos:
        ip = str(info[4][0])
        if not address_allowed(ip, allow_private=allow_private):
            raise AddressRefused(f"host {hostname!r} resolves to a non-public address ({ip})")
        ips.append(ip)
    if not ips:
        raise AddressRefused(f"host {hostname!r} did not resolve to any address")
    return list(dict.fromkeys(ips))
