"""Proving an e-mail domain: a TXT record looked up at a real DNS server on loopback (tests/sso_idps.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from accounts.models import AuditEvent, SsoDomain
from accounts.sso.rules import verification_record_value
from accounts.sso.services import sso_domain_add, sso_domain_remove, sso_domain_verify
from reasoningbank.errors import Conflict, InvalidInput, Unavailable
from tests.sso_idps import TxtServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def dns_server(settings: Any) -> Iterator[TxtServer]:
    with TxtServer() as server:
        settings.SSO_DNS_NAMESERVERS = [server.address]
        yield server


def test_a_domain_is_verified_once_its_txt_record_holds_the_token(cast: Any, dns_server: TxtServer) -> None:
    alice = cast.principal(cast.alice)
    row = sso_domain_add(principal=alice, domain="ACME.test")
    assert row.domain == "acme.test" and row.verified_at is None
    with pytest.raises(InvalidInput, match=r"no TXT record _reasoningbank-challenge\.acme\.test"):
        sso_domain_verify(principal=alice, domain_id=row.pk)
    assert dns_server.asked == ["_reasoningbank-challenge.acme.test"]
    dns_server.records["_reasoningbank-challenge.acme.test"] = [
        "google-site-verification=x",
        verification_record_value(row.token),
    ]
    verified = sso_domain_verify(principal=alice, domain_id=row.pk)
    assert verified.verified_at is not None
    event = AuditEvent.objects.get(verb="sso.domain_verify")
    assert event.organization == cast.org_a and event.data["domain"] == "acme.test"
    assert event.actor_user == cast.alice


def test_a_record_with_another_organizations_token_proves_nothing(cast: Any, dns_server: TxtServer) -> None:
    mine = sso_domain_add(principal=cast.principal(cast.alice), domain="shared.test")
    theirs = sso_domain_add(principal=cast.principal(cast.charlie), domain="shared.test")
    dns_server.records["_reasoningbank-challenge.shared.test"] = [verification_record_value(theirs.token)]
    with pytest.raises(InvalidInput):
        sso_domain_verify(principal=cast.principal(cast.alice), domain_id=mine.pk)
    sso_domain_verify(principal=cast.principal(cast.charlie), domain_id=theirs.pk)
    # the domain is globex's now: even acme's own token later does not take it over
    dns_server.records["_reasoningbank-challenge.shared.test"].append(verification_record_value(mine.token))
    with pytest.raises(Conflict, match=r"another organization has verified shared\.test"):
        sso_domain_verify(principal=cast.principal(cast.alice), domain_id=mine.pk)
    assert SsoDomain.objects.filter(domain="shared.test", verified_at__isnull=False).get().organization == cast.org_b


def test_a_dns_server_that_does_not_answer_is_a_retry_not_a_failure(cast: Any, settings: Any) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # bound, never answers
        silent.bind(("127.0.0.1", 0))
        settings.SSO_DNS_NAMESERVERS = [f"127.0.0.1:{silent.getsockname()[1]}"]
        settings.SSO_DNS_TIMEOUT_SECONDS = 0.3
        row = sso_domain_add(principal=cast.principal(cast.alice), domain="acme.test")
        with pytest.raises(Unavailable, match="try again"):
            sso_domain_verify(principal=cast.principal(cast.alice), domain_id=row.pk)
    assert SsoDomain.objects.get(pk=row.pk).verified_at is None


def test_a_domain_is_added_once_and_bad_input_names_the_fix(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    sso_domain_add(principal=alice, domain="acme.test")
    with pytest.raises(Conflict, match="already on the list"):
        sso_domain_add(principal=alice, domain="@Acme.test")
    with pytest.raises(InvalidInput, match=r"example\.com"):
        sso_domain_add(principal=alice, domain="not a domain")


def test_another_organizations_domain_is_not_found_for_verify_or_remove(cast: Any) -> None:
    from django.http import Http404

    row = sso_domain_add(principal=cast.principal(cast.alice), domain="acme.test")
    with pytest.raises(Http404):
        sso_domain_verify(principal=cast.principal(cast.charlie), domain_id=row.pk)
    with pytest.raises(Http404):
        sso_domain_remove(principal=cast.principal(cast.charlie), domain_id=row.pk)
    assert SsoDomain.objects.filter(pk=row.pk).exists()
