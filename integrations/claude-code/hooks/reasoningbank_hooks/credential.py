"""Which service a hook talks to and with which token: ``REASONINGBANK_URL`` (default
http://127.0.0.1:8000) and ``REASONINGBANK_TOKEN``. A module of its own, apart from the queue (spool.py),
so that a hook that only asks the service — the tool hook before every file a client reads — does not
import the queue's modules (pathlib, subprocess, random) to learn them."""

from __future__ import annotations

import os
from typing import NamedTuple


class Credential(NamedTuple):
    url: str
    token: str

    @property
    def fingerprint(self) -> str:
        """Which service and token a queued file is for, without the token itself."""
        import hashlib  # here: only the queue asks, and a hook that only asks the service never loads it

        return hashlib.sha256(f"{self.url}\0{self.token}".encode()).hexdigest()[:16]


def credential() -> Credential:
    url = os.environ.get("REASONINGBANK_URL", "").strip() or "http://127.0.0.1:8000"
    return Credential(url.rstrip("/"), os.environ.get("REASONINGBANK_TOKEN", "").strip())
