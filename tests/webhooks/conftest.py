"""Webhook fixtures: a deterministic resolver (no DNS), the receiving end on respx (no network), and
the worker's queue captured instead of run."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import respx

from tests.dns_table import DnsTable
from tests.respx_httpx2 import serve_httpx2_from
from webhooks import services
from webhooks.models import WebhookSubscription
from webhooks.services import subscription_create

RECEIVER_HOST = "hooks.example.com"
RECEIVER_IP = "93.184.216.34"  # a public address; never contacted: respx answers
RECEIVER_URL = f"https://{RECEIVER_HOST}/rb"
# the delivery connects to the address it checked, naming the host in Host and TLS SNI
RECEIVER_ADDRESS_URL = f"https://{RECEIVER_IP}/rb"


class Resolver(DnsTable):
    """The receiver's name resolves to its public address; add names to ``names``."""

    def __init__(self) -> None:
        super().__init__({RECEIVER_HOST: [RECEIVER_IP]})


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    table = Resolver()
    monkeypatch.setattr(socket, "getaddrinfo", table)
    return table


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """(delivery id, delay in seconds) of every hand-over to the worker."""
    queue: list[tuple[str, float]] = []
    monkeypatch.setattr(
        services, "delivery_enqueue", lambda delivery_id, *, delay_seconds=0: queue.append((delivery_id, delay_seconds))
    )
    return queue


@pytest.fixture
def receiver() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router, serve_httpx2_from(router):
        yield router


@pytest.fixture
def subscribe(cast: Any, resolver: Resolver) -> Any:
    """subscribe(events, org=acme, url=RECEIVER_URL) -> a subscription made by the org's owner."""

    def _subscribe(events: list[str], *, org: Any = None, url: str = RECEIVER_URL) -> WebhookSubscription:
        owner = cast.alice if org in (None, cast.org_a) else cast.charlie
        return subscription_create(principal=cast.principal(owner), url=url, events=events)

    return _subscribe
