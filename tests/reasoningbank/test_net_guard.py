"""The address guard shared by webhook deliveries, the OAuth metadata fetch and client registration
(reasoningbank/net_guard.py, docs/security/address-guard.md). Pure: names resolve through a
monkeypatched ``socket.getaddrinfo`` (no DNS), and a literal host must never reach it.

The expectations come from the registries themselves, copied below: the IANA IPv4 Special-Purpose
Address Registry and the IANA IPv6 Special-Purpose Address Registry (RFC 6890), every entry with its
"Globally Reachable" column ("" where a terminated entry has none). A few addresses of every entry are
checked against the most specific entry that holds them; the forms that carry an IPv4 address are
checked for every internal IPv4 entry."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest

from reasoningbank.net_guard import AddressRefused, address_allowed, host_addresses_checked, host_literal
from tests.dns_table import DnsTable

# IANA IPv4 Special-Purpose Address Registry: address block | name | RFC | globally reachable
IPV4_REGISTRY = """
0.0.0.0/8          | "This network"                            | RFC 791  | False
0.0.0.0/32         | "This host on this network"               | RFC 1122 | False
10.0.0.0/8         | Private-Use                               | RFC 1918 | False
100.64.0.0/10      | Shared Address Space                      | RFC 6598 | False
127.0.0.0/8        | Loopback                                  | RFC 1122 | False
169.254.0.0/16     | Link Local                                | RFC 3927 | False
172.16.0.0/12      | Private-Use                               | RFC 1918 | False
192.0.0.0/24       | IETF Protocol Assignments                 | RFC 6890 | False
192.0.0.0/29       | IPv4 Service Continuity Prefix            | RFC 7335 | False
192.0.0.8/32       | IPv4 dummy address                        | RFC 7600 | False
192.0.0.9/32       | Port Control Protocol Anycast             | RFC 7723 | True
192.0.0.10/32      | Traversal Using Relays around NAT Anycast | RFC 8155 | True
192.0.0.170/32     | NAT64/DNS64 Discovery                     | RFC 8880 | False
192.0.0.171/32     | NAT64/DNS64 Discovery                     | RFC 8880 | False
192.0.2.0/24       | Documentation (TEST-NET-1)                | RFC 5737 | False
192.31.196.0/24    | AS112-v4                                  | RFC 7535 | True
192.52.193.0/24    | AMT                                       | RFC 7450 | True
192.88.99.0/24     | Deprecated (6to4 Relay Anycast)           | RFC 7526 |
192.88.99.2/32     | 6a44-relay anycast address                | RFC 6751 | False
192.168.0.0/16     | Private-Use                               | RFC 1918 | False
192.175.48.0/24    | Direct Delegation AS112 Service           | RFC 7534 | True
198.18.0.0/15      | Benchmarking                              | RFC 2544 | False
198.51.100.0/24    | Documentation (TEST-NET-2)                | RFC 5737 | False
203.0.113.0/24     | Documentation (TEST-NET-3)                | RFC 5737 | False
240.0.0.0/4        | Reserved                                  | RFC 1112 | False
255.255.255.255/32 | Limited Broadcast                         | RFC 919  | False
"""

# IANA IPv6 Special-Purpose Address Registry: address block | name | RFC | globally reachable
IPV6_REGISTRY = """
::1/128            | Loopback Address                          | RFC 4291 | False
::/128             | Unspecified Address                       | RFC 4291 | False
::ffff:0:0/96      | IPv4-mapped Address                       | RFC 4291 | False
64:ff9b::/96       | IPv4-IPv6 Translat.                       | RFC 6052 | True
64:ff9b:1::/48     | IPv4-IPv6 Translat.                       | RFC 8215 | False
100::/64           | Discard-Only Address Block                | RFC 6666 | False
100:0:0:1::/64     | Dummy IPv6 Prefix                         | RFC 9780 | False
2001::/23          | IETF Protocol Assignments                 | RFC 2928 | False
2001::/32          | TEREDO                                    | RFC 4380 | N/A
2001:1::1/128      | Port Control Protocol Anycast             | RFC 7723 | True
2001:1::2/128      | Traversal Using Relays around NAT Anycast | RFC 8155 | True
2001:1::3/128      | DNS-SD Service Registration Protocol Anycast | RFC 9665 | True
2001:2::/48        | Benchmarking                              | RFC 5180 | False
2001:3::/32        | AMT                                       | RFC 7450 | True
2001:4:112::/48    | AS112-v6                                  | RFC 7535 | True
2001:10::/28       | Deprecated (previously ORCHID)            | RFC 4843 |
2001:20::/28       | ORCHIDv2                                  | RFC 7343 | True
2001:30::/28       | Drone Remote ID Protocol Entity Tags      | RFC 9374 | True
2001:db8::/32      | Documentation                             | RFC 3849 | False
2002::/16          | 6to4                                      | RFC 3056 | N/A
2620:4f:8000::/48  | Direct Delegation AS112 Service           | RFC 7534 | True
3fff::/20          | Documentation                             | RFC 9637 | False
5f00::/16          | Segment Routing (SRv6) SIDs               | RFC 9602 | False
fc00::/7           | Unique-Local                              | RFC 4193 | False
fe80::/10          | Link-Local Unicast                        | RFC 4291 | False
"""

# entries whose addresses are judged by the IPv4 address they carry (tested with the embedded forms):
# a mapped address is the IPv4 address to a socket; the NAT64 well-known prefix must only carry global
# addresses (RFC 6052 section 3.1); 6to4 and Teredo say N/A
JUDGED_BY_THE_EMBEDDED_IPV4 = {"::ffff:0:0/96", "64:ff9b::/96", "2001::/32", "2002::/16"}
# never a destination, even with the development switch on; multicast is not in the registries
NEVER = ("0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "239.255.255.250", "::", "ff02::1", "ff0e::1")


def _registry(text: str) -> list[tuple[Any, str, str]]:
    rows = []
    for line in text.strip().splitlines():
        block, name, _rfc, reachable = (cell.strip() for cell in line.split("|"))
        rows.append((ipaddress.ip_network(block), name, reachable))
    return rows


REGISTRY = _registry(IPV4_REGISTRY) + _registry(IPV6_REGISTRY)


def _most_specific(address: Any) -> tuple[Any, str, str] | None:
    holding = [row for row in REGISTRY if row[0].version == address.version and address in row[0]]
    return max(holding, key=lambda row: row[0].prefixlen, default=None)


def _samples() -> list[tuple[str, str, bool]]:
    """(address, the entry that decides it, globally reachable) for the first, middle and last address
    of every entry, each judged by the most specific entry holding it."""
    samples = []
    for network, _name, _reachable in REGISTRY:
        for address in {network[0], network[network.num_addresses // 2], network[-1]}:
            decides = _most_specific(address)
            assert decides is not None
            if str(decides[0]) in JUDGED_BY_THE_EMBEDDED_IPV4:
                continue
            samples.append((str(address), f"{decides[0]} {decides[1]}", decides[2] == "True"))
    return sorted(set(samples))


def test_the_copied_registries_have_every_entry() -> None:
    assert len(_registry(IPV4_REGISTRY)) == 26  # 25 records, NAT64/DNS64 Discovery holds two blocks
    assert len(_registry(IPV6_REGISTRY)) == 25


@pytest.mark.parametrize(("address", "entry", "globally_reachable"), _samples())
def test_every_special_purpose_entry_is_refused_unless_globally_reachable(
    address: str, entry: str, globally_reachable: bool
) -> None:
    assert address_allowed(address, allow_private=False) is globally_reachable, entry


@pytest.mark.parametrize(
    "address",
    ["10.0.0.1", "172.16.0.1", "192.168.1.1", "127.0.0.1", "169.254.169.254", "100.64.0.1", "198.18.0.1",
     "::1", "fd00::1", "fe80::1", "fec0::1", "2001:db8::1", "100::1"],
)  # fmt: skip
def test_internal_addresses_are_allowed_by_the_development_switch(address: str) -> None:
    assert not address_allowed(address, allow_private=False)
    assert address_allowed(address, allow_private=True)


@pytest.mark.parametrize("address", [*NEVER, "not an address", ""])
def test_what_is_never_a_destination_is_refused_even_with_the_development_switch(address: str) -> None:
    assert not address_allowed(address, allow_private=True)


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001::1"]
)
def test_a_public_address_is_allowed(address: str) -> None:
    assert address_allowed(address, allow_private=False)


@pytest.mark.parametrize("address", ["fec0::1", "fec0::ffff", "feff:ffff::1", "::2:1", "400::1", "e000::1", "fe00::1"])
def test_ipv6_outside_global_unicast_is_refused_site_local_and_the_reserved_space(address: str) -> None:
    """Only 2000::/3 is global unicast in the IANA IPv6 Address Space; fec0::/10 is deprecated site-local."""
    assert not address_allowed(address, allow_private=False)


# --- IPv4 inside IPv6 -----------------------------------------------------------------------------


def _v6(value: int) -> str:
    return str(ipaddress.IPv6Address(value))


def _embedded_forms(ipv4: str) -> dict[str, str]:
    """Every IPv6 spelling of ``ipv4`` a resolver (or an attacker's AAAA record) can give."""
    v4 = int(ipaddress.IPv4Address(ipv4))
    public_server = int(ipaddress.IPv4Address("65.54.227.120"))
    return {
        "IPv4-compatible ::a.b.c.d": _v6(v4),
        "IPv4-mapped ::ffff:a.b.c.d": _v6(0xFFFF << 32 | v4),
        "IPv4-translated ::ffff:0:a.b.c.d": _v6(0xFFFF << 48 | v4),
        "NAT64 well-known 64:ff9b::/96": _v6(0x64FF9B << 96 | v4),
        "NAT64 local-use 64:ff9b:1::/48": _v6((0x64FF9B0001 << 80) | v4),
        "6to4 2002::/16": _v6(0x2002 << 112 | v4 << 80 | 1),
        "Teredo server 2001::/32": _v6(0x20010000 << 96 | v4 << 64 | (~public_server & 0xFFFFFFFF)),
        "Teredo client 2001::/32": _v6(0x20010000 << 96 | public_server << 64 | (~v4 & 0xFFFFFFFF)),
    }


def _internal_ipv4() -> list[str]:
    """One address of every IPv4 entry that is not globally reachable (and of multicast)."""
    picked = []
    for network, _name, reachable in _registry(IPV4_REGISTRY):
        address = network[1] if network.num_addresses > 2 else network[0]
        if reachable != "True" and _most_specific(address)[2] != "True":  # type: ignore[index]
            picked.append(str(address))
    return [*picked, "224.0.0.1"]


@pytest.mark.parametrize("ipv4", _internal_ipv4())
def test_every_ipv6_form_that_embeds_an_internal_ipv4_address_is_refused(ipv4: str) -> None:
    for form, address in _embedded_forms(ipv4).items():
        assert not address_allowed(address, allow_private=False), f"{form}: {address} carries {ipv4}"


@pytest.mark.parametrize("ipv4", ["0.0.0.0", "224.0.0.1", "255.255.255.255"])
def test_a_form_embedding_what_is_never_a_destination_is_refused_even_with_the_switch(ipv4: str) -> None:
    for form, address in _embedded_forms(ipv4).items():
        assert not address_allowed(address, allow_private=True), f"{form}: {address} carries {ipv4}"


@pytest.mark.parametrize("ipv4", ["10.0.0.1", "127.0.0.1", "169.254.169.254"])
def test_a_form_embedding_an_internal_address_is_allowed_by_the_development_switch(ipv4: str) -> None:
    for form, address in _embedded_forms(ipv4).items():
        assert address_allowed(address, allow_private=True), f"{form}: {address} carries {ipv4}"


@pytest.mark.parametrize("ipv4", ["8.8.8.8", "93.184.216.34"])
def test_a_public_ipv4_address_is_reachable_through_the_forms_that_route_to_it(ipv4: str) -> None:
    """A dual-stack socket, DNS64 behind a NAT64 gateway, 6to4 and Teredo really reach the IPv4 host; the
    deprecated forms (compatible, translated) and the local-use NAT64 prefix stay refused."""
    allowed = {form for form, address in _embedded_forms(ipv4).items() if address_allowed(address, allow_private=False)}
    assert allowed == {
        "IPv4-mapped ::ffff:a.b.c.d",
        "NAT64 well-known 64:ff9b::/96",
        "6to4 2002::/16",
        "Teredo server 2001::/32",
        "Teredo client 2001::/32",
    }


@pytest.mark.parametrize(
    "address",
    ["::127.0.0.1", "::169.254.169.254", "::10.0.0.1", "::ffff:0:169.254.169.254", "64:ff9b:1::a9fe:a9fe", "fec0::1"],
)
def test_the_forms_a_red_team_got_past_the_old_guard_are_refused(address: str) -> None:
    assert not address_allowed(address, allow_private=False)


def test_a_zone_id_names_a_local_interface_and_is_refused() -> None:
    assert not address_allowed("fe80::1%eth0", allow_private=False)
    assert not address_allowed("2606:2800:220:1:248:1893:25c8:1946%eth0", allow_private=False)
    assert address_allowed("fe80::1%eth0", allow_private=True)
    assert not address_allowed("::ffff:0.0.0.0%eth0", allow_private=True)  # the zone hides nothing
    assert not address_allowed("ff02::1%eth0", allow_private=True)


# --- literal hosts in URLs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://2130706433/", "127.0.0.1"),  # one decimal number
        ("http://0x7f.1/", "127.0.0.1"),  # hex, then the last part fills three bytes
        ("http://017700000001/", "127.0.0.1"),  # one octal number
        ("http://0177.0.0.01/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"),  # a trailing dot
        ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
        ("http://2852039166/", "169.254.169.254"),
        ("http://0/", "0.0.0.0"),
        ("http://10.1/", "10.0.0.1"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"),
        ("http://[::127.0.0.1]/", "::7f00:1"),
        ("http://[fe80::1%25eth0]/", "fe80::1%eth0"),  # a zone id, as a URL writes it
        ("http://８.８.８.８/", "8.8.8.8"),  # full-width digits, as IDNA maps them
        ("https://93.184.216.34:8443/", "93.184.216.34"),
    ],
)
def test_a_literal_host_is_read_in_every_spelling_a_resolver_accepts(url: str, address: str) -> None:
    assert host_literal(urlsplit(url).hostname or "") == address


@pytest.mark.parametrize("host", ["hooks.example.com", "localhost", "1e100.net", "xn--80ak6aa92e.com", "a.b-1"])
def test_a_name_is_not_a_literal(host: str) -> None:
    assert host_literal(host) is None


@pytest.mark.parametrize("host", ["256.0.0.1", "1.2.3.4.5", "4294967296", "08.0.0.1", "0x7g.1", "example.123", "1..1"])
def test_a_host_ending_in_a_number_that_is_no_address_is_refused(host: str) -> None:
    """A resolver might read it as an address in a way the guard did not."""
    with pytest.raises(AddressRefused):
        host_literal(host)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> DnsTable:
    table = DnsTable()
    monkeypatch.setattr(socket, "getaddrinfo", table)
    return table


@pytest.mark.parametrize(
    "url",
    ["https://2130706433/", "https://0x7f.1/", "https://017700000001/", "https://127.0.0.1./", "https://0/",
     "https://[::127.0.0.1]/", "https://[::ffff:0:169.254.169.254]/", "https://[64:ff9b:1::a9fe:a9fe]/",
     "https://[fec0::1]/", "https://[fe80::1%25eth0]/", "https://0xa9fea9fe/"],
)  # fmt: skip
def test_a_url_with_an_internal_literal_host_is_refused_without_asking_the_resolver(dns: DnsTable, url: str) -> None:
    with pytest.raises(AddressRefused, match="non-public address"):
        host_addresses_checked(urlsplit(url).hostname or "", 443, allow_private=False)
    assert dns.asked == []


def test_a_public_literal_host_is_its_own_address(dns: DnsTable) -> None:
    assert host_addresses_checked("1572395042", 443, allow_private=False) == ["93.184.216.34"]
    assert host_addresses_checked("127.0.0.1.", 443, allow_private=True) == ["127.0.0.1"]
    assert dns.asked == []


def test_a_host_is_checked_by_every_address_it_resolves_to(dns: DnsTable) -> None:
    dns.names["public.test"] = ["93.184.216.34", "93.184.216.35", "93.184.216.34"]
    assert host_addresses_checked("public.test", 443, allow_private=False) == ["93.184.216.34", "93.184.216.35"]


@pytest.mark.parametrize(
    "internal", ["169.254.169.254", "::ffff:169.254.169.254", "::169.254.169.254", "64:ff9b:1::a9fe:a9fe", "fec0::1"]
)
def test_one_internal_address_among_public_ones_refuses_the_whole_host(dns: DnsTable, internal: str) -> None:
    """An AAAA record may embed the IPv4 address an A record could not give (DNS rebinding included:
    the check runs on every resolution, and callers connect to the address it returned)."""
    dns.names["split.test"] = ["2606:2800:220:1:248:1893:25c8:1946", internal]
    with pytest.raises(AddressRefused, match="non-public address"):
        host_addresses_checked("split.test", 443, allow_private=False)
    assert host_addresses_checked("split.test", 443, allow_private=True)[1] == internal


def test_a_host_that_does_not_resolve_is_refused(dns: DnsTable) -> None:
    with pytest.raises(AddressRefused, match="could not resolve"):
        host_addresses_checked("nowhere.test", 443, allow_private=True)
    with pytest.raises(AddressRefused, match="no host"):
        host_addresses_checked("", 443, allow_private=True)
