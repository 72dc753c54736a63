"""The steps of docs/webhooks.md "Trying webhooks locally", run as written: its OpenSSL commands make the
development CA and the localhost certificate, its receiver (with the documented signature check) serves
https, and a delivery made with its settings arrives verified — refused when the secret is wrong."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.services import delivery_attempt, subscription_secret_rotate, webhook_event_publish

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the documented steps use openssl")


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Step 1 as written, with ``~`` in a temporary directory: the CA and the localhost certificate."""
    ca_steps = blocks(section("Trying webhooks locally"), "bash")[0]
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", ca_steps],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def documented_receiver(home: Path, secret: str, port: int) -> subprocess.Popen[str]:
    """Step 2: ``rb_verify.py`` from "Verifying a delivery" and ``receiver.py``, started as step 5 says."""
    directory = home / "rb-webhooks"
    (directory / "rb_verify.py").write_text(blocks(section("Verifying a delivery"), "python")[0])
    (directory / "receiver.py").write_text(blocks(section("Trying webhooks locally"), "python")[0])
    process = subprocess.Popen(
        [sys.executable, "receiver.py"],
        cwd=directory,
        env={"PATH": os.environ["PATH"], "WEBHOOK_SECRET": secret, "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == f"listening on https://localhost:{port}/"
    return process


@pytest.fixture
def documented_settings(home: Path, settings, resolver) -> None:
    """Step 3's environment, as settings (``~`` expanded to the test's home)."""
    command = blocks(section("Trying webhooks locally"), "bash")[1]
    assignments = dict(word.split("=", 1) for word in shlex.split(command) if re.match(r"^[A-Z_]+=", word))
    assert assignments["WEBHOOKS_ALLOW_PRIVATE_ADDRESSES"] == "true"
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOKS_CA_BUNDLE = assignments["WEBHOOKS_CA_BUNDLE"].replace("~", str(home), 1)
    settings.WEBHOOKS_SSL_CERT_FILE = settings.WEBHOOKS_SSL_CERT_DIR = ""
    resolver.names["localhost"] = ["127.0.0.1"]


@pytest.fixture
def receiver_output() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(10)


def printed(process: subprocess.Popen[str]) -> str:
    process.terminate()
    out, _ = process.communicate(timeout=10)
    return out


def test_a_delivery_to_the_documented_receiver_arrives_verified_and_a_wrong_secret_is_refused(
    cast, home, documented_settings, subscribe, enqueued, receiver_output, django_capture_on_commit_callbacks
):
    port = free_port()
    subscription = subscribe(["memory.created"], url=f"https://localhost:{port}/")  # step 4
    process = documented_receiver(home, subscription.secret, port)
    receiver_output.append(process)
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = webhook_event_publish(
            organization_id=cast.org_a.pk, event_type="memory.created", data={"memory": {"id": "mem_local"}}
        )
    done = delivery_attempt(delivery.id)
    assert done is not None and done.status == WebhookDelivery.STATUS_SUCCEEDED, done.error
    assert done.response_code == 204
    # the receiver now holds an old secret: the next delivery is refused with a 401, and the page says so
    subscription_secret_rotate(principal=cast.principal(cast.alice), subscription=subscription)
    with django_capture_on_commit_callbacks(execute=True):
        (refused,) = webhook_event_publish(
            organization_id=cast.org_a.pk, event_type="memory.created", data={"memory": {"id": "mem_other"}}
        )
    attempt = delivery_attempt(refused.id)
    assert attempt is not None and attempt.response_code == 401
    assert WebhookSubscription.objects.get().last_error == "the receiver answered HTTP 401"
    lines = [line for line in printed(process).splitlines() if not line.startswith("127.0.0.1 - -")]  # access log
    assert lines[0].startswith('verified memory.created {"id":') and "mem_local" in lines[0]
    assert lines[1].startswith("REFUSED memory.created") and "mem_other" in lines[1]


def test_without_the_documented_ca_setting_the_attempt_names_the_certificate_problem(
    cast, home, documented_settings, subscribe, enqueued, receiver_output, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_CA_BUNDLE = ""
    port = free_port()
    subscription = subscribe(["memory.created"], url=f"https://localhost:{port}/")
    receiver_output.append(documented_receiver(home, subscription.secret, port))
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = webhook_event_publish(
            organization_id=cast.org_a.pk, event_type="memory.created", data={"memory": {"id": "mem_local"}}
        )
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_PENDING
    # the words the documentation tells the reader to look for
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.error and "unable to get local issuer certificate" in attempt.error
