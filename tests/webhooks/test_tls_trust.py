"""Deliveries to an https receiver whose certificate comes from a development CA
(docs/webhooks.md#trying-webhooks-locally): refused until the CA is trusted through WEBHOOKS_CA_BUNDLE,
SSL_CERT_FILE or SSL_CERT_DIR, then delivered — the certificate still checked against the host name,
and proxies of the environment still ignored. A real TLS server on loopback with a CA made in the test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tls_receiver import TestCA, TlsReceiver
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.services import delivery_attempt, webhook_ca_locations, webhook_event_publish
from webhooks.signing import SIGNATURE_HEADER, signature_verify
from webhooks.transport import DeliveryFailed, delivery_post

REPO = Path(__file__).resolve().parents[2]
BODY = b'{"id":"evt_1","type":"memory.created"}'


@pytest.fixture
def ca(tmp_path: Path) -> TestCA:
    return TestCA(tmp_path)


@pytest.fixture
def localhost(ca: TestCA, monkeypatch: pytest.MonkeyPatch) -> TlsReceiver:
    """A receiver at https://localhost:<port>/hook whose certificate names localhost only (no IP address):
    the delivery connects to 127.0.0.1, so only a check against the host name lets it through."""
    # proxies in the environment must change nothing: the sender never reads them
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    cert, key = ca.issue("localhost")
    with TlsReceiver(cert, key) as receiver:
        yield receiver


def post(url: str, *ca_locations: str) -> int:
    return delivery_post(
        url, BODY, {}, timeout_seconds=10, allow_private=True, ca_locations=tuple(ca_locations)
    ).status_code


def test_a_certificate_from_a_ca_the_system_does_not_trust_is_refused(localhost: TlsReceiver) -> None:
    with pytest.raises(DeliveryFailed, match=r"CERTIFICATE_VERIFY_FAILED.*unable to get local issuer"):
        post(localhost.url())
    assert localhost.received == []


def test_a_ca_bundle_file_makes_the_receiver_trusted_and_the_body_arrives(localhost: TlsReceiver, ca: TestCA) -> None:
    assert post(localhost.url(), str(ca.path)) == 204
    (request,) = localhost.received
    assert request.body == BODY and request.headers["Host"] == f"localhost:{localhost.port}"


def test_the_certificate_is_still_checked_against_the_host_name(ca: TestCA) -> None:
    cert, key = ca.issue("receiver.example.org")  # signed by the trusted CA, for another name
    with TlsReceiver(cert, key) as receiver:
        with pytest.raises(DeliveryFailed, match="Hostname mismatch"):
            post(receiver.url("localhost"), str(ca.path))
        assert receiver.received == []


def test_the_trusted_ca_adds_to_the_systems_and_does_not_replace_them(ca: TestCA) -> None:
    # the context still holds the system's CAs: public receivers keep working beside the local one
    from webhooks.transport import ssl_context_for

    system = len(ssl_context_for(()).get_ca_certs())
    with_ca = ssl_context_for((str(ca.path),)).get_ca_certs()
    assert len(with_ca) == system + 1
    names = [dict(item[0] for item in cert["subject"]).get("commonName") for cert in with_ca]
    assert "ReasoningBank test CA" in names


@pytest.mark.skipif(shutil.which("openssl") is None, reason="`openssl rehash` prepares the CA directory")
def test_a_ca_directory_prepared_with_openssl_rehash_is_trusted_too(localhost: TlsReceiver, ca: TestCA) -> None:
    directory = ca.directory / "cas"
    directory.mkdir()
    shutil.copy(ca.path, directory / "dev-ca.pem")
    subprocess.run(["openssl", "rehash", str(directory)], check=True, capture_output=True)
    assert post(localhost.url(), str(directory)) == 204


def test_a_bundle_that_cannot_be_read_fails_the_attempt_naming_it(localhost: TlsReceiver, ca: TestCA) -> None:
    with pytest.raises(DeliveryFailed, match=r"/nowhere/ca\.pem cannot be read"):
        post(localhost.url(), "/nowhere/ca.pem")
    not_pem = ca.directory / "notes.txt"
    not_pem.write_text("not a certificate")
    with pytest.raises(DeliveryFailed, match=r"notes\.txt cannot be loaded"):
        post(localhost.url(), str(not_pem))


# --- through the worker's attempt, from the settings -----------------------------------------------


@pytest.fixture
def local_subscription(
    localhost: TlsReceiver, subscribe, resolver, settings, enqueued, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOKS_CA_BUNDLE = settings.WEBHOOKS_SSL_CERT_FILE = settings.WEBHOOKS_SSL_CERT_DIR = ""
    resolver.names["localhost"] = ["127.0.0.1"]
    subscription = subscribe(["memory.created"], url=localhost.url())
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = webhook_event_publish(
            organization_id=subscription.organization_id, event_type="memory.created", data={"memory": {"id": "m1"}}
        )
    return delivery


def test_without_a_trusted_ca_the_attempt_fails_and_the_subscription_shows_the_certificate_error(
    local_subscription: WebhookDelivery, localhost: TlsReceiver
) -> None:
    attempt = delivery_attempt(local_subscription.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_PENDING
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.error and localhost.received == []
    subscription = WebhookSubscription.objects.get()
    assert subscription.health == "failing" and "CERTIFICATE_VERIFY_FAILED" in subscription.last_error


@pytest.mark.parametrize("setting", ["WEBHOOKS_SSL_CERT_FILE", "WEBHOOKS_CA_BUNDLE"])
def test_a_ca_from_ssl_cert_file_or_webhooks_ca_bundle_lets_the_signed_delivery_through(
    local_subscription: WebhookDelivery, localhost: TlsReceiver, ca: TestCA, settings, setting: str
) -> None:
    setattr(settings, setting, str(ca.path))
    attempt = delivery_attempt(local_subscription.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_SUCCEEDED, attempt.error
    (request,) = localhost.received
    assert signature_verify(WebhookSubscription.objects.get().secret, request.headers[SIGNATURE_HEADER], request.body)
    assert json.loads(request.body)["data"] == {"memory": {"id": "m1"}}


def test_ssl_cert_dir_may_name_several_directories_like_openssls(settings) -> None:
    settings.WEBHOOKS_CA_BUNDLE, settings.WEBHOOKS_SSL_CERT_FILE = "/srv/ca/dev.pem", "/etc/ssl/dev.pem"
    settings.WEBHOOKS_SSL_CERT_DIR = f"/etc/ssl/certs{os.pathsep}/srv/ca/dir{os.pathsep}"
    assert webhook_ca_locations() == ("/srv/ca/dev.pem", "/etc/ssl/dev.pem", "/etc/ssl/certs", "/srv/ca/dir")


# --- the settings read from the environment at start-up ------------------------------------------


def _settings_in_a_fresh_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(repr((s.WEBHOOKS_CA_BUNDLE, s.WEBHOOKS_SSL_CERT_FILE, s.WEBHOOKS_SSL_CERT_DIR)))"
    )
    base = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "DEBUG": "1"}
    base["DJANGO_SETTINGS_MODULE"] = "reasoningbank.settings"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_the_ca_settings_come_from_ssl_cert_file_ssl_cert_dir_and_webhooks_ca_bundle(ca: TestCA) -> None:
    done = _settings_in_a_fresh_process(
        {"SSL_CERT_FILE": "/etc/ssl/dev.pem", "SSL_CERT_DIR": "/etc/ssl/certs", "WEBHOOKS_CA_BUNDLE": str(ca.path)}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == repr((str(ca.path), "/etc/ssl/dev.pem", "/etc/ssl/certs"))


def test_a_webhooks_ca_bundle_that_does_not_exist_stops_the_start_naming_it() -> None:
    done = _settings_in_a_fresh_process({"WEBHOOKS_CA_BUNDLE": "/nowhere/dev-ca.pem"})
    assert done.returncode != 0
    assert "WEBHOOKS_CA_BUNDLE" in done.stderr and "/nowhere/dev-ca.pem" in done.stderr
