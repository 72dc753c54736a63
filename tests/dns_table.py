"""DNS for tests: ``socket.getaddrinfo`` answered from a table (no network), recording what was asked;
a name that is not in the table does not resolve. The address guard (reasoningbank/net_guard.py)
resolves through it; a literal host never reaches it."""

from __future__ import annotations

import socket
from typing import Any


class DnsTable:
    def __init__(self, names: dict[str, list[str]] | None = None) -> None:
        self.names: dict[str, list[str]] = dict(names or {})
        self.asked: list[str] = []

    def __call__(self, host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        self.asked.append(host)
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
            for ip in self.names[host]
        ]
