"""One delivery attempt's deadline (webhooks.transport.delivery_post) against real receivers on loopback
that answer one byte a second: WEBHOOK_TIMEOUT bounds the whole attempt — name lookup, connection, TLS
handshake, request, status line and headers — not each read (docs/security/worker-fairness.md).

The bounds below are generous on purpose (the deadline plus seconds of slack on a loaded machine); what
they prove is that the attempt ends near its deadline instead of when the receiver chooses."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from tests.slow_receiver import SlowReceiver
from webhooks.transport import DeliveryFailed, delivery_post

DEADLINE = 3.0
SLACK = 3.0  # a loaded test machine; still far below what the receiver would take (its max_seconds)


def post(url: str, *, timeout: float = DEADLINE) -> Any:
    return delivery_post(url, b'{"id": "evt_1"}', {}, timeout_seconds=timeout, allow_private=True)


def hung_up_soon(receiver: SlowReceiver) -> bool:
    """The attempt's connections were closed by the attempt itself, at its end (not left to the garbage
    collector or to the receiver)."""
    deadline = time.monotonic() + 3
    while receiver.open_now() and time.monotonic() < deadline:
        time.sleep(0.05)
    return receiver.open_now() == 0


def timed_failure(url: str) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(DeliveryFailed) as failed:
        post(url)
    return time.monotonic() - started, str(failed.value)


def test_a_receiver_that_dribbles_its_headers_a_byte_a_second_is_cut_at_the_deadline() -> None:
    # each byte comes well within any per-read timeout: only a deadline for the whole attempt stops it
    with SlowReceiver(mode="headers", interval=1.0, max_seconds=30) as receiver:
        elapsed, error = timed_failure(receiver.url())
        assert DEADLINE - 0.5 <= elapsed <= DEADLINE + SLACK, elapsed
        assert "deadline" in error
        assert receiver.connections[0].sent >= 1  # it was answering, slowly
        assert hung_up_soon(receiver)


def test_a_tls_handshake_that_never_completes_is_cut_at_the_deadline() -> None:
    with SlowReceiver(mode="tls", interval=1.0, max_seconds=30) as receiver:
        elapsed, error = timed_failure(receiver.url())
        assert elapsed <= DEADLINE + SLACK, elapsed
        assert "deadline" in error
        assert hung_up_soon(receiver)  # a handshake cut half-way leaves no socket behind


def test_an_answer_whose_body_never_ends_counts_by_its_status_without_waiting_for_the_body() -> None:
    with SlowReceiver(mode="body", interval=1.0, max_seconds=30) as receiver:
        started = time.monotonic()
        attempt = post(receiver.url())
        assert attempt.status_code == 200
        assert time.monotonic() - started < DEADLINE  # the status is enough; the body is not read
        assert hung_up_soon(receiver)


def test_a_name_lookup_that_hangs_is_cut_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def hanging(*args: Any, **kwargs: Any) -> Any:
        release.wait(60)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    try:
        elapsed, error = timed_failure("https://hooks.example.com/rb")
        assert elapsed <= DEADLINE + SLACK, elapsed
        assert "deadline" in error
    finally:
        release.set()  # the abandoned lookup's thread ends


def test_a_receiver_that_answers_at_once_is_not_held_to_the_deadline() -> None:
    with SlowReceiver(mode="headers", interval=0.0, max_seconds=0) as receiver:
        attempt = post(receiver.url(), timeout=10)
        assert attempt.status_code == 204
        assert attempt.latency_ms < 5000
