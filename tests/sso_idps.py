"""Real identity providers and a real DNS server for the single sign-on tests, each on loopback:

* ``OidcIdp`` — panva's oidc-provider (npm, tests/idp/oidc_idp.mjs) in a Node.js process of its own;
* ``SamlIdp`` — pysaml2's IdP (tests/idp/saml_idp.py) in a Python process of its own, signing with
  Debian's xmlsec1;
* ``TxtServer`` — a DNS server answering TXT questions from a table (dnspython's wire format), which the
  domain check asks through ``SSO_DNS_NAMESERVERS``.

scripts/ensure-test-idps.sh installs the npm package and xmlsec1 (scripts/test.sh calls it).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

IDP_DIR = Path(__file__).resolve().parent / "idp"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(process: subprocess.Popen[str], marker: str, what: str) -> None:
    """Read the process's output until it says it is ready (it prints ``marker`` once listening)."""
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if marker in line:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()  # type: ignore[union-attr]
            return
    raise RuntimeError(f"{what} did not start (exit {process.wait()}):\n{''.join(seen)[-4000:]}")


class OidcIdp:
    """``with OidcIdp(clients=[...], groups={...}) as idp:`` — ``idp.issuer`` is its http://127.0.0.1 URL."""

    def __init__(self, *, clients: list[dict[str, Any]], groups: dict[str, list[str]] | None = None) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.clients = clients
        self.groups = groups or {}
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> OidcIdp:
        node = shutil.which("node")
        if node is None or not (IDP_DIR / "node_modules" / "oidc-provider").is_dir():
            raise RuntimeError("the test OpenID Connect provider is not installed: run scripts/ensure-test-idps.sh")
        env = {
            **os.environ,
            "RB_IDP_PORT": str(self.port),
            "RB_IDP_CLIENTS": json.dumps(self.clients),
            "RB_IDP_GROUPS": json.dumps(self.groups),
            "NODE_NO_WARNINGS": "1",
        }
        self.process = subprocess.Popen(
            [node, str(IDP_DIR / "oidc_idp.mjs")],
            env=env,
            cwd=IDP_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        _wait_ready(self.process, "oidc idp ready", "the OpenID Connect provider")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


class SamlIdp:
    """``with SamlIdp(sp_metadata_url=..., groups={...}) as idp:`` — pysaml2's IdP; ``idp.metadata_url``,
    ``idp.entity_id``. It reads the service provider's metadata from ``sp_metadata_url`` when the first
    request arrives."""

    def __init__(
        self,
        *,
        sp_metadata_url: str,
        groups: dict[str, list[str]] | None = None,
        workdir: Path,
        group_attribute: str = "groups",
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.entity_id = f"{self.base}/idp/metadata"
        self.metadata_url = self.entity_id
        self.sp_metadata_url = sp_metadata_url
        self.groups = groups or {}
        self.group_attribute = group_attribute
        self.workdir = workdir
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> SamlIdp:
        if shutil.which("xmlsec1") is None:
            raise RuntimeError("xmlsec1 is missing: run scripts/ensure-test-idps.sh")
        env = {
            **os.environ,
            "RB_IDP_PORT": str(self.port),
            "RB_IDP_SP_METADATA_URL": self.sp_metadata_url,
            "RB_IDP_GROUPS": json.dumps(self.groups),
            "RB_IDP_GROUP_ATTRIBUTE": self.group_attribute,
            "RB_IDP_WORKDIR": str(self.workdir),
        }
        self.process = subprocess.Popen(
            [sys.executable, str(IDP_DIR / "saml_idp.py")],
            env=env,
            cwd=IDP_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        _wait_ready(self.process, "saml idp ready", "the SAML identity provider")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


class TxtServer:
    """A DNS server on a loopback UDP port answering TXT questions from ``records`` ({name: [value, ...]});
    any other name does not exist (NXDOMAIN). ``server.address`` is "127.0.0.1:<port>"."""

    def __init__(self, records: dict[str, list[str]] | None = None) -> None:
        self.records: dict[str, list[str]] = dict(records or {})
        self.asked: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        import dns.message
        import dns.rcode
        import dns.rdatatype
        import dns.rrset

        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(data)
            answer = dns.message.make_response(query)
            question = query.question[0]
            name = question.name.to_text().rstrip(".").lower()
            self.asked.append(name)
            values = self.records.get(name)
            if values is None:
                answer.set_rcode(dns.rcode.NXDOMAIN)
            elif question.rdtype == dns.rdatatype.TXT:
                answer.answer.append(
                    dns.rrset.from_text(question.name, 60, "IN", "TXT", *[json.dumps(value) for value in values])
                )
            self.sock.sendto(answer.to_wire(), peer)

    def __enter__(self) -> TxtServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.close()
