"""Signing and verifying deliveries (webhooks/signing.py, pure)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from webhooks.signing import (
    SignatureInvalid,
    secret_generate,
    signature_compute,
    signature_header,
    signature_verify,
)

SECRET = "whsec_test-secret"
BODY = b'{"id":"evt_1","type":"memory.created","data":{}}'
NOW = 1_780_000_000


def test_the_signature_is_hmac_sha256_of_the_timestamp_a_dot_and_the_raw_body() -> None:
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert signature_compute(SECRET, NOW, BODY) == expected
    assert signature_header(SECRET, NOW, BODY) == f"t={NOW},v1={expected}"


def test_a_delivery_signed_with_the_secret_verifies_and_gives_its_timestamp() -> None:
    header = signature_header(SECRET, NOW, BODY)
    assert signature_verify(SECRET, header, BODY, now=NOW + 10) == NOW


@pytest.mark.parametrize(
    "body",
    [BODY.replace(b"memory.created", b"memory.merged"), BODY + b" ", BODY[:-1]],
    ids=["changed", "appended", "cut"],
)
def test_a_body_changed_in_any_way_fails_verification(body: bytes) -> None:
    with pytest.raises(SignatureInvalid, match="does not match"):
        signature_verify(SECRET, signature_header(SECRET, NOW, BODY), body, now=NOW)


def test_another_secret_fails_verification() -> None:
    with pytest.raises(SignatureInvalid, match="does not match"):
        signature_verify("whsec_other", signature_header(SECRET, NOW, BODY), BODY, now=NOW)


def test_a_replayed_delivery_outside_the_tolerance_is_refused_either_side_of_the_clock() -> None:
    header = signature_header(SECRET, NOW, BODY)
    assert signature_verify(SECRET, header, BODY, now=NOW + 300) == NOW  # the edge still counts
    for now in (NOW + 301, NOW - 301):
        with pytest.raises(SignatureInvalid, match="tolerance"):
            signature_verify(SECRET, header, BODY, now=now)
    assert signature_verify(SECRET, header, BODY, now=NOW + 3000, tolerance_seconds=3600) == NOW


def test_moving_the_timestamp_to_dodge_the_replay_window_breaks_the_signature() -> None:
    signature = signature_compute(SECRET, NOW, BODY)
    with pytest.raises(SignatureInvalid, match="does not match"):
        signature_verify(SECRET, f"t={NOW + 1000},v1={signature}", BODY, now=NOW + 1000)


@pytest.mark.parametrize("header", ["", "garbage", f"t={NOW}", "v1=abc", "t=soon,v1=abc", f"v0=abc,t={NOW}"])
def test_a_missing_or_malformed_header_is_refused(header: str) -> None:
    with pytest.raises(SignatureInvalid):
        signature_verify(SECRET, header, BODY, now=NOW)


def test_one_matching_v1_among_several_is_enough() -> None:
    good = signature_compute(SECRET, NOW, BODY)
    assert signature_verify(SECRET, f"t={NOW},v1={'0' * 64},v1={good}", BODY, now=NOW) == NOW


def test_secrets_are_new_each_time_and_say_what_they_are() -> None:
    first, second = secret_generate(), secret_generate()
    assert first != second
    assert first.startswith("whsec_") and len(first) >= 40
