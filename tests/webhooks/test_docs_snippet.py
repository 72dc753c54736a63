"""The verification snippet of docs/webhooks.md, run as a receiver would copy it, against deliveries
signed by the service's own signer: it accepts a good one and refuses tampering and replays."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from webhooks.signing import signature_header

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
SECRET = "whsec_receiver-test"
BODY = b'{"id":"evt_1","type":"session.failed","data":{"session":{"id":"ses_1"}}}'


@pytest.fixture(scope="module")
def verify() -> Callable[..., bool]:
    section = DOC.read_text(encoding="utf-8").split("## Verifying a delivery", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "docs/webhooks.md has no Python snippet under 'Verifying a delivery'"
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), str(DOC), "exec"), namespace)
    return namespace["reasoningbank_verify"]  # type: ignore[return-value]


def test_the_documented_check_accepts_a_delivery_the_service_signed(verify) -> None:
    assert verify(SECRET, signature_header(SECRET, int(time.time()), BODY), BODY)


def test_the_documented_check_refuses_a_changed_body_or_another_secret(verify) -> None:
    header = signature_header(SECRET, int(time.time()), BODY)
    assert not verify(SECRET, header, BODY.replace(b"ses_1", b"ses_2"))
    assert not verify("whsec_other", header, BODY)


def test_the_documented_check_refuses_a_replay_older_than_five_minutes(verify) -> None:
    assert not verify(SECRET, signature_header(SECRET, int(time.time()) - 301, BODY), BODY)
    assert verify(SECRET, signature_header(SECRET, int(time.time()) - 3000, BODY), BODY, tolerance=3600)


@pytest.mark.parametrize("header", ["", "t=abc,v1=00", "v1=00", "t=1"])
def test_the_documented_check_refuses_a_malformed_header(verify, header: str) -> None:
    assert not verify(SECRET, header, BODY)
