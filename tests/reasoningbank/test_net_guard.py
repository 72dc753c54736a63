"""The address guard shared by the OAuth metadata fetch and webhook deliveries
(reasoningbank/net_guard.py). Names resolve through a monkeypatched ``socket.getaddrinfo``: no DNS."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from reasoningbank.net_guard import AddressRefused, address_allowed, host_addresses_checked

INTERNAL = (
    "10.0.0.1",
    "192.168.1.1",
    "172.16.0.1",
    "127.0.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "::1",
    "fd00::1",
    "fe80::1",
    "::ffff:10.0.0.1",
    "64:ff9b::a00:1",
)


@pytest.mark.parametrize("ip", INTERNAL)
def test_an_internal_address_is_refused_unless_allowed(ip: str) -> None:
    assert not address_allowed(ip, allow_private=False)
    assert address_allowed(ip, allow_private=True)


@pytest.mark.parametrize("ip", ["0.0.0.0", "::", "224.0.0.1", "ff02::1", "not an address"])
def test_the_unspecified_and_multicast_addresses_are_refused_even_when_internal_ones_are_allowed(ip: str) -> None:
    assert not address_allowed(ip, allow_private=True)


def test_a_public_address_is_allowed() -> None:
    assert address_allowed("93.184.216.34", allow_private=False)
    assert address_allowed("2606:2800:220:1:248:1893:25c8:1946", allow_private=False)


def _resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_host_is_checked_by_every_address_it_resolves_to(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolving(monkeypatch, {"public.test": ["93.184.216.34", "93.184.216.35", "93.184.216.34"]})
    assert host_addresses_checked("public.test", 443, allow_private=False) == ["93.184.216.34", "93.184.216.35"]


def test_one_internal_address_among_public_ones_refuses_the_whole_host(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolving(monkeypatch, {"split.test": ["93.184.216.34", "169.254.169.254"]})
    with pytest.raises(AddressRefused, match="non-public address"):
        host_addresses_checked("split.test", 443, allow_private=False)
    assert host_addresses_checked("split.test", 443, allow_private=True) == ["93.184.216.34", "169.254.169.254"]


def test_a_host_that_does_not_resolve_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolving(monkeypatch, {})
    with pytest.raises(AddressRefused, match="could not resolve"):
        host_addresses_checked("nowhere.test", 443, allow_private=True)
