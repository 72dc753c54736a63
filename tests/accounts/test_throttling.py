"""Abuse limits (docs/tenancy.md#failed-tokens-are-throttled): failed bearer tokens over REST, failed logins, signups.

Every limit is counted in the database (``accounts/throttling.py``, allauth through the shared
cache), so that several web worker processes share the counters; these tests run in one process
on that same backend. Client addresses are set per request (``REMOTE_ADDR``).
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts import throttling

ATTACKER, USER, OTHER = "203.0.113.7", "198.51.100.20", "192.0.2.55"
PASSWORD = "correct-horse-battery-staple-9"


@pytest.fixture(autouse=True)
def small_limits(settings: Any) -> None:
    settings.AUTH_THROTTLE_FAILURES = 5
    settings.AUTH_THROTTLE_PREFIX_FAILURES = 4
    settings.AUTH_THROTTLE_WINDOW = 60.0
    settings.AUTH_THROTTLE_BLOCK = 300.0


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def bad_token(n: int) -> str:
    return f"rb_{n:04d}" + "x" * 40


# --- bearer tokens over REST ---------------------------------------------------------------------


def test_bad_tokens_from_one_address_are_answered_429_with_retry_after_once_over_the_limit(db):
    answers = [bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER) for n in range(8)]
    assert [a.status_code for a in answers[:4]] == [401] * 4
    assert {a.status_code for a in answers[4:]} == {429}
    limited = answers[-1]
    assert 250 <= int(limited["Retry-After"]) <= 300
    body = limited.json()
    assert body["code"] == "throttled"
    assert "too many failed authentications from this address" in body["detail"].lower()


def test_a_valid_token_is_served_from_an_address_that_just_sent_50_bad_ones(cast, make_token, settings):
    from accounts.tokens.services import token_revoke

    settings.AUTH_THROTTLE_FAILURES = 20  # the defaults: one misconfigured agent behind a shared NAT
    settings.AUTH_THROTTLE_PREFIX_FAILURES = 10
    raw, _ = make_token(cast.org_a)
    revoked, revoked_principal = make_token(cast.org_a, label="old")
    token_revoke(token=revoked_principal.token, actor=None)
    bad = [revoked, expired_token(cast, make_token)] + [bad_token(n) for n in range(48)]

    codes = [bearer(b).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code for b in bad]
    assert codes[:19] == [401] * 19 and set(codes[19:]) == {429}

    served = bearer(raw).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    assert served.status_code == 200 and served.json()["organization"]["slug"] == cast.org_a.slug
    # the address is still blocked for what fails: the bad ones stay 429, the revoked one too
    assert bearer(bad_token(99)).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 429
    assert bearer(revoked).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 429
    assert bearer(raw).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 200


def expired_token(cast, make_token) -> str:
    from datetime import timedelta as delta

    from django.utils import timezone

    raw, principal = make_token(cast.org_a, label="expired")
    principal.token.expires_at = timezone.now() - delta(minutes=1)
    principal.token.save(update_fields=["expires_at"])
    return raw


def test_a_blocked_address_is_told_no_reason_for_a_failure(cast, make_token):
    # an unblocked client is told when its token expired; a blocked one learns only "not accepted"
    expired = expired_token(cast, make_token)
    assert "expired on" in bearer(expired).get("/api/v1/me", REMOTE_ADDR=USER).json()["detail"]
    for n in range(5):
        bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    refused = bearer(expired).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    assert refused.status_code == 429 and "expired" not in refused.json()["detail"]


def test_a_valid_oauth_access_token_is_served_from_a_blocked_address(cast):
    from django.test import Client

    from tests.accounts.oauth.oauth_flow import API_RESOURCE, Flow, dcr_client

    web = Client(REMOTE_ADDR=ATTACKER)
    web.force_login(cast.alice)
    access = Flow(dcr_client(web), resources=[API_RESOURCE]).tokens(web, org=cast.org_a.slug)["access_token"]
    for n in range(8):
        bearer(f"rbo_{n:04d}" + "x" * 40).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    assert bearer("rbo_nope" + "x" * 40).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 429
    assert bearer(access).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 200


def test_a_good_token_from_another_address_still_works_during_an_attack(cast, make_token):
    raw, _ = make_token(cast.org_a)
    for n in range(10):
        bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    assert bearer(raw).get("/api/v1/me", REMOTE_ADDR=USER).status_code == 200


def test_guesses_at_one_token_prefix_from_many_addresses_are_throttled_but_the_token_itself_works(cast, make_token):
    raw, _ = make_token(cast.org_a)
    forged = [raw[:10] + f"{n:02d}" + "y" * 38 for n in range(6)]
    answers = [bearer(f).get("/api/v1/me", REMOTE_ADDR=f"198.18.0.{n}") for n, f in enumerate(forged)]
    assert [a.status_code for a in answers] == [401, 401, 401, 429, 429, 429]
    assert "this token prefix" in answers[-1].json()["detail"]
    # a prefix is shown to every member: knowing it must not lock the real token out
    assert bearer(raw).get("/api/v1/me", REMOTE_ADDR=OTHER).status_code == 200


def test_a_failure_after_the_counting_window_is_still_429_while_the_block_lasts(db):
    for n in range(5):
        bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    # two minutes later: the counting window is over, the block is not (the counters are rows every
    # web process shares, so this holds in a process that has not served the address yet)
    from django.utils import timezone

    from accounts.models import ThrottleCounter

    window_over = timezone.now() - timedelta(seconds=1)
    ThrottleCounter.objects.filter(key__startswith="bearer:addr:").update(window_ends_at=window_over)
    assert bearer(bad_token(9)).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 429


def test_ipv6_clients_are_counted_by_their_64_bit_network(db):
    answers = [bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=f"2001:db8:1:2::{n + 1:x}") for n in range(6)]
    assert answers[-1].status_code == 429


def test_a_valid_token_costs_no_throttle_query_even_from_a_failing_address(cast, make_token):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    raw, _ = make_token(cast.org_a)
    for n in range(6):
        bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    with CaptureQueriesContext(connection) as captured:
        assert bearer(raw).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 200
    assert captured.captured_queries and not [q for q in captured.captured_queries if "rb_throttle" in q["sql"]]


def test_an_address_going_over_the_limit_is_logged_once(db, caplog):
    with caplog.at_level("WARNING", logger="accounts.throttling"):
        for n in range(9):
            bearer(bad_token(n)).get("/api/v1/me", REMOTE_ADDR=ATTACKER)
    blocked = [r.getMessage() for r in caplog.records if "blocked after" in r.getMessage()]
    assert blocked == [f"auth throttle: {ATTACKER} blocked after 5 failures (bearer)"]


# --- grants at the OAuth token endpoint -----------------------------------------------------------


def test_failed_grants_from_one_address_are_429_but_a_good_code_is_exchanged(cast):
    from django.test import Client

    from tests.accounts.oauth.oauth_flow import Flow, dcr_client

    web = Client(REMOTE_ADDR=ATTACKER)
    web.force_login(cast.alice)
    flow = Flow(dcr_client(web))
    code = flow.code_from(flow.consent(web, org=cast.org_a.slug))

    answers = [flow.exchange(web, f"guessed-code-{n}") for n in range(7)]
    assert [a.status_code for a in answers] == [400] * 4 + [429] * 3
    limited = answers[-1]
    assert limited.json()["error"] == "too_many_requests" and limited.json()["code"] == "throttled"
    assert 250 <= int(limited["Retry-After"]) <= 300

    exchanged = flow.exchange(web, code)
    assert exchanged.status_code == 200 and exchanged.json()["access_token"].startswith("rbo_")
    assert flow.exchange(web, "guessed-code-again").status_code == 429
    # failed grants are a count of their own: a bad bearer token from the address is still a 401
    assert bearer(bad_token(1)).get("/api/v1/me", REMOTE_ADDR=ATTACKER).status_code == 401


# --- logins ---------------------------------------------------------------------------------------


@pytest.fixture
def member(db):
    from accounts.organizations.services import user_create

    return user_create(email="dana@acme.test", password=PASSWORD)


def login(client, email: str, password: str, address: str):
    return client.post("/accounts/login/", {"login": email, "password": password}, REMOTE_ADDR=address)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_a_user_whose_email_was_attacked_from_another_address_still_logs_in(client, member, settings):
    from django.test import Client

    attacker = Client()
    for _ in range(8):
        login(attacker, member.email, "wrong-password", ATTACKER)
    response = login(client, member.email, PASSWORD, USER)
    assert response.status_code == 302 and logged_in(client)


def test_the_attacking_address_cannot_log_in_to_the_attacked_account_even_with_the_right_password(client, member):
    for _ in range(6):
        login(client, member.email, "wrong-password", ATTACKER)
    response = login(client, member.email, PASSWORD, ATTACKER)
    assert not logged_in(client)
    assert "Too many failed sign-in attempts" in response.content.decode()


def test_the_wait_for_a_failing_address_grows_with_each_failure(member):
    key = throttling.login_account_key(member.email)
    waits = []
    for _ in range(8):
        throttling.login_failure_record(account=key, address=ATTACKER)
        waits.append(throttling.login_wait(account=key, address=ATTACKER))
    assert waits[:4] == [0, 0, 0, 0]  # not under attack yet: a user may mistype
    assert waits[4] > 0 and all(b > a for a, b in itertools.pairwise(waits[4:]))
    assert throttling.login_wait(account=key, address=USER) == 0


def test_failed_logins_from_one_address_across_accounts_are_limited(client, db):
    responses = [login(client, f"nobody{n}@acme.test", "wrong", ATTACKER) for n in range(12)]
    assert "Too many failed login attempts" in responses[-1].content.decode()


# --- signups --------------------------------------------------------------------------------------


def signup(client, n: int, address: str):
    return client.post(
        "/accounts/signup/",
        {"email": f"new{n}@example.test", "password1": PASSWORD, "password2": PASSWORD},
        REMOTE_ADDR=address,
    )


def test_signups_in_a_row_from_one_address_are_limited(client, db, settings):
    from django.contrib.auth import get_user_model
    from django.test import Client

    codes = [signup(Client(), n, ATTACKER).status_code for n in range(12)]
    assert codes[:10] == [302] * 10 and codes[10:] == [429, 429]
    assert get_user_model().objects.count() == 10
    assert signup(client, 99, USER).status_code == 302  # another address is not affected


# --- where the counters live ---------------------------------------------------------------------


def test_allauth_rate_limits_are_kept_in_the_shared_database_cache_and_other_keys_in_memory(client, db):
    from django.core.cache import cache

    from accounts.models import SharedCacheEntry

    signup(client, 1, ATTACKER)
    assert SharedCacheEntry.objects.filter(cache_key__contains="allauth:rl:").exists()
    cache.set("rb:health:worker", "fresh", 10)
    assert cache.get("rb:health:worker") == "fresh"
    assert not SharedCacheEntry.objects.filter(cache_key__contains="rb:health").exists()
