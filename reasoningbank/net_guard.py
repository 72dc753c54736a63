"""Which addresses the service may connect to on a user's behalf (server-side request forgery);
docs/security/address-guard.md says what it refuses and why.

Two features fetch or post to a URL someone else chose: webhook deliveries (``webhooks/``) and the
OAuth client metadata fetch (``accounts/oauth/cimd.py``); client registration checks the web page URLs
a client names with it too (``accounts/oauth/protocol.py``). Each resolves the host first, refuses it when any
of its addresses is not globally reachable, and then connects to the address it checked, so a second
DNS answer cannot rebind the connection inside.

The rule is a table: every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries with its
"Globally Reachable" column (the most specific entry wins), IPv6 outside the global unicast range
2000::/3 of the IANA IPv6 Address Space (site-local fec0::/10 and the rest the IETF reserved), and
the IPv6 forms that carry an IPv4 address — IPv4-mapped, -compatible and -translated, the NAT64
prefixes, 6to4, Teredo — judged by the IPv4 address inside, since a connection to them can end there.
A host written as a literal in any spelling a resolver accepts (``2130706433``, ``0x7f.1``,
``017700000001``, a trailing dot, an IPv6 zone id) is read here, never handed to the resolver.

Each feature has a development switch that allows the internal addresses
(``WEBHOOKS_ALLOW_PRIVATE_ADDRESSES``, ``OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES``); the addresses that are
never a destination — unspecified, "this network", multicast, the limited broadcast, and any form that
embeds one — are refused even then. No settings are read here: the switch is an argument.
"""

from __future__ import annotations

import ipaddress
import socket
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__pure__ = True

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# how bad an address is, in order: the worst of an address and what it embeds decides
PUBLIC, INTERNAL, NEVER = 0, 1, 2

_LOW32 = 0xFFFFFFFF


class AddressRefused(Exception):
    """The host cannot be reached safely: it does not resolve, or it is (or resolves to) an address
    that is not globally reachable."""


@dataclass(frozen=True)
class Block:
    """One entry of a special-purpose registry. ``globally_reachable`` is the registry's column; None
    where it says N/A because the answer is the embedded IPv4 address's (6to4, Teredo)."""

    network: Network
    name: str
    reference: str
    globally_reachable: bool | None


def _block(cidr: str, name: str, reference: str, globally_reachable: bool | None) -> Block:
    return Block(ipaddress.ip_network(cidr), name, reference, globally_reachable)


# IANA IPv4 Special-Purpose Address Registry, every entry (RFC 6890 defines the registry)
IPV4_SPECIAL_PURPOSE = (
    _block("0.0.0.0/8", '"This network"', "RFC 791", False),
    _block("0.0.0.0/32", '"This host on this network"', "RFC 1122", False),
    _block("10.0.0.0/8", "Private-Use", "RFC 1918", False),
    _block("100.64.0.0/10", "Shared Address Space", "RFC 6598", False),
    _block("127.0.0.0/8", "Loopback", "RFC 1122", False),
    _block("169.254.0.0/16", "Link Local", "RFC 3927", False),
    _block("172.16.0.0/12", "Private-Use", "RFC 1918", False),
    _block("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890", False),
    _block("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", False),
    _block("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", False),
    _block("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", True),
    _block("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", True),
    _block("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880", False),
    _block("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880", False),
    _block("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", False),
    _block("192.31.196.0/24", "AS112-v4", "RFC 7535", True),
    _block("192.52.193.0/24", "AMT", "RFC 7450", True),
    # terminated in 2015, its columns empty: nothing a receiver should live on
    _block("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", False),
    _block("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", False),
    _block("192.168.0.0/16", "Private-Use", "RFC 1918", False),
    _block("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", True),
    _block("198.18.0.0/15", "Benchmarking", "RFC 2544", False),
    _block("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", False),
    _block("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", False),
    _block("240.0.0.0/4", "Reserved", "RFC 1112", False),
    _block("255.255.255.255/32", "Limited Broadcast", "RFC 919", False),
)

# IANA IPv6 Special-Purpose Address Registry, every entry
IPV6_SPECIAL_PURPOSE = (
    _block("::1/128", "Loopback Address", "RFC 4291", False),
    _block("::/128", "Unspecified Address", "RFC 4291", False),
    _block("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", False),
    _block("64:ff9b::/96", "IPv4-IPv6 Translation", "RFC 6052", True),
    _block("64:ff9b:1::/48", "IPv4-IPv6 Translation (local use)", "RFC 8215", False),
    _block("100::/64", "Discard-Only Address Block", "RFC 6666", False),
    _block("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", False),
    _block("2001::/23", "IETF Protocol Assignments", "RFC 2928", False),
    _block("2001::/32", "TEREDO", "RFC 4380", None),
    _block("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", True),
    _block("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", True),
    _block("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", True),
    _block("2001:2::/48", "Benchmarking", "RFC 5180", False),
    _block("2001:3::/32", "AMT", "RFC 7450", True),
    _block("2001:4:112::/48", "AS112-v6", "RFC 7535", True),
    _block("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", False),  # terminated in 2014
    _block("2001:20::/28", "ORCHIDv2", "RFC 7343", True),
    _block("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", True),
    _block("2001:db8::/32", "Documentation", "RFC 3849", False),
    _block("2002::/16", "6to4", "RFC 3056", None),
    _block("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", True),
    _block("3fff::/20", "Documentation", "RFC 9637", False),
    _block("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", False),
    _block("fc00::/7", "Unique-Local", "RFC 4193", False),
    _block("fe80::/10", "Link-Local Unicast", "RFC 4291", False),
)

# the IANA IPv6 Address Space: only 2000::/3 is global unicast; what lies outside and is in no entry
# above is reserved by the IETF, named here where a reader would look for it
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
IPV6_OUTSIDE_GLOBAL_UNICAST = (
    _block("fec0::/10", "Site-Local (deprecated)", "RFC 3879", False),
    _block("::/8", "Reserved by the IETF", "RFC 4291", False),
)

# never a destination, whatever the development switches say: a connection to them lands on this host
# (0.0.0.0 and :: reach local listeners on Linux) or on many
_NEVER_V4 = (
    _block("0.0.0.0/8", '"This network"', "RFC 791", False),
    _block("224.0.0.0/4", "Multicast", "RFC 5771", False),
    _block("255.255.255.255/32", "Limited Broadcast", "RFC 919", False),
)
_NEVER_V6 = (
    _block("::/128", "Unspecified Address", "RFC 4291", False),
    _block("ff00::/8", "Multicast", "RFC 4291", False),
)


@dataclass(frozen=True)
class Embedding:
    """An IPv6 form that carries IPv4 addresses. ``trusted``: the form is a real route to the IPv4
    address (a dual-stack socket, a NAT64 gateway, a 6to4 or Teredo relay), so the address is judged
    by what it embeds alone; otherwise it is at least internal too (deprecated or local-use forms)."""

    network: ipaddress.IPv6Network
    name: str
    reference: str
    extract: Callable[[int], tuple[int, ...]]
    trusted: bool


def _low32(value: int) -> tuple[int, ...]:
    return (value & _LOW32,)


EMBEDDINGS = (
    Embedding(ipaddress.IPv6Network("::ffff:0:0/96"), "IPv4-mapped", "RFC 4291", _low32, True),
    Embedding(ipaddress.IPv6Network("::ffff:0:0:0/96"), "IPv4-translated", "RFC 2765", _low32, False),
    Embedding(ipaddress.IPv6Network("64:ff9b::/96"), "NAT64 well-known prefix", "RFC 6052", _low32, True),
    # a local-use prefix may be cut at any RFC 6052 length; the /96 layout is the common one
    Embedding(ipaddress.IPv6Network("64:ff9b:1::/48"), "NAT64 local-use prefix", "RFC 8215", _low32, False),
    Embedding(ipaddress.IPv6Network("2002::/16"), "6to4", "RFC 3056", lambda n: ((n >> 80) & _LOW32,), True),
    # Teredo: the server's address, then the client's (stored inverted)
    Embedding(
        ipaddress.IPv6Network("2001::/32"), "Teredo", "RFC 4380", lambda n: ((n >> 64) & _LOW32, ~n & _LOW32), True
    ),
    # ::a.b.c.d, deprecated; :: and ::1 are the unspecified and loopback addresses, not this form
    Embedding(ipaddress.IPv6Network("::/96"), "IPv4-compatible", "RFC 4291", _low32, False),
)


@dataclass(frozen=True)
class Verdict:
    """How bad an address is (``PUBLIC``, ``INTERNAL`` or ``NEVER``) and why, as a phrase."""

    severity: int
    reason: str = ""


def _most_specific(address: Address, blocks: tuple[Block, ...]) -> Block | None:
    matches = [block for block in blocks if address.version == block.network.version and address in block.network]
    return max(matches, key=lambda block: block.network.prefixlen, default=None)


def _described(block: Block) -> str:
    return f"{block.name}, {block.reference}"


def _ipv4_verdict(address: ipaddress.IPv4Address) -> Verdict:
    never = _most_specific(address, _NEVER_V4)
    if never is not None:
        return Verdict(NEVER, _described(never))
    block = _most_specific(address, IPV4_SPECIAL_PURPOSE)
    if block is not None and block.globally_reachable is not True:
        return Verdict(INTERNAL, _described(block))
    return Verdict(PUBLIC)


def _embedding(address: ipaddress.IPv6Address) -> Embedding | None:
    if int(address) <= 1:  # :: and ::1
        return None
    return next((form for form in EMBEDDINGS if address in form.network), None)


def _ipv6_verdict(address: ipaddress.IPv6Address) -> Verdict:
    if address.scope_id:  # judged without the zone, then at least internal: a zone names an interface here
        verdict = _ipv6_verdict(ipaddress.IPv6Address(int(address)))
        if verdict.severity == NEVER:
            return verdict
        return Verdict(INTERNAL, f"a zone id (%{address.scope_id}) names a network interface of this machine")
    never = _most_specific(address, _NEVER_V6)
    if never is not None:
        return Verdict(NEVER, _described(never))
    form = _embedding(address)
    if form is not None:
        embedded_addresses = [ipaddress.IPv4Address(value) for value in form.extract(int(address))]
        inner = [(ipv4, _ipv4_verdict(ipv4)) for ipv4 in embedded_addresses]
        embedded, worst = max(inner, key=lambda item: item[1].severity)
        own = PUBLIC if form.trusted else INTERNAL
        if worst.severity == PUBLIC and own == PUBLIC:
            return Verdict(PUBLIC)
        why = f"{form.name} ({form.reference}) for {embedded}"
        if worst.severity >= own:
            return Verdict(worst.severity, f"{why}: {worst.reason}")
        return Verdict(own, f"{why}: a deprecated or local-use form")
    block = _most_specific(address, IPV6_SPECIAL_PURPOSE)
    if block is not None:
        return Verdict(PUBLIC) if block.globally_reachable else Verdict(INTERNAL, _described(block))
    if address not in IPV6_GLOBAL_UNICAST:
        outside = _most_specific(address, IPV6_OUTSIDE_GLOBAL_UNICAST)
        return Verdict(INTERNAL, _described(outside) if outside else "outside the global unicast range 2000::/3")
    return Verdict(PUBLIC)


def address_verdict(ip: str) -> Verdict:
    """The verdict on one address as a resolver or a URL gives it (an IPv6 zone id included); text that
    is not an address is ``NEVER``."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return Verdict(NEVER, "not an IP address")
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_verdict(address)
    return _ipv6_verdict(address)


def address_problem(ip: str, *, allow_private: bool) -> str | None:
    """Why the service may not connect to ``ip``, as a phrase, or None when it may: a globally
    reachable address always, an internal one only when ``allow_private``, the others never."""
    verdict = address_verdict(ip)
    if verdict.severity == PUBLIC or (verdict.severity == INTERNAL and allow_private):
        return None
    return verdict.reason


def address_allowed(ip: str, *, allow_private: bool) -> bool:
    return address_problem(ip, allow_private=allow_private) is None


# --- a host written as an address --------------------------------------------------------------------


def _ipv4_number(part: str) -> int | None:
    """One dotted part as the WHATWG URL standard and inet_aton read it: 0x hex, 0 octal, decimal."""
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if digits == "":
        return 0 if base != 10 else None
    try:
        return int(digits, base) if digits.isascii() and digits.isalnum() else None
    except ValueError:
        return None


def _ends_in_a_number(labels: list[str]) -> bool:
    last = labels[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(char in "0123456789abcdefABCDEF" for char in last[2:])


def host_literal(host: str) -> str | None:
    """The address ``host`` (a URL's host) spells literally, in canonical form, or None for a name.
    IPv4 in every spelling a resolver accepts — ``2130706433``, ``0x7f.1``, ``017700000001``, a
    trailing dot; IPv6 with or without brackets, a zone id (``%25eth0`` as URLs write it) kept. A host
    whose last label is a number but which is no valid address is ``AddressRefused``: a resolver might
    read it as one."""
    host = unicodedata.normalize("NFKC", host).strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return str(ipaddress.IPv6Address(host.replace("%25", "%", 1)))
        except ValueError:
            raise AddressRefused(f"host {host!r} is not a valid IPv6 address") from None
    labels = (host[:-1] if host.endswith(".") else host).split(".")
    if not host or not _ends_in_a_number(labels):
        return None
    numbers = [_ipv4_number(label) if label else None for label in labels]
    if len(numbers) > 4 or any(number is None for number in numbers):
        raise AddressRefused(f"host {host!r} looks like an IPv4 address but is not one")
    parts = [number for number in numbers if number is not None]
    if any(part > 255 for part in parts[:-1]) or parts[-1] >= 256 ** (5 - len(parts)):
        raise AddressRefused(f"host {host!r} looks like an IPv4 address but is out of range")
    value = parts[-1]
    for index, part in enumerate(parts[:-1]):
        value += part << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


# --- a host, resolved ----------------------------------------------------------------------------------


def host_addresses_checked(hostname: str, port: int, *, allow_private: bool) -> list[str]:
    """Every address ``hostname`` stands for (in order, without repeats), all of them allowed, or
    ``AddressRefused``: one refused address refuses the whole host, so a split answer cannot smuggle a
    connection inside. A literal is read here and never resolved. Connect to one of these addresses,
    not to the name."""
    if not hostname:
        raise AddressRefused("the URL names no host")
    literal = host_literal(hostname)
    if literal is not None:
        problem = address_problem(literal, allow_private=allow_private)
        if problem is not None:
            raise AddressRefused(f"host {hostname!r} is a non-public address ({literal}): {problem}")
        return [literal]
    try:
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"could not resolve host {hostname!r}: {exc}") from exc
    ips: list[str] = []
    for info in infos:
        ip = str(info[4][0])
        problem = address_problem(ip, allow_private=allow_private)
        if problem is not None:
            raise AddressRefused(f"host {hostname!r} resolves to a non-public address ({ip}): {problem}")
        ips.append(ip)
    if not ips:
        raise AddressRefused(f"host {hostname!r} did not resolve to any address")
    return list(dict.fromkeys(ips))
