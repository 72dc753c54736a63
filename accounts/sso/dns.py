"""The TXT records of a name, looked up with dnspython at the configured DNS servers (``SSO_DNS_NAMESERVERS``,
"host" or "host:port"; empty: the system's). A name that does not exist, or has no TXT record, has none;
a server that does not answer is an ``Unavailable`` the admin can retry."""

from __future__ import annotations

import dns.exception
import dns.resolver
from django.conf import settings

from reasoningbank.errors import Unavailable


def _resolver() -> dns.resolver.Resolver:
    servers = list(settings.SSO_DNS_NAMESERVERS)
    if not servers:
        resolver = dns.resolver.Resolver()
    else:
        resolver = dns.resolver.Resolver(configure=False)
        hosts, ports = [], set()
        for server in servers:
            host, _, port = server.rpartition(":") if server.count(":") == 1 else (server, "", "")
            hosts.append(host)
            if port:
                ports.add(int(port))
        resolver.nameservers = hosts
        if ports:
            resolver.port = ports.pop()
    resolver.lifetime = float(settings.SSO_DNS_TIMEOUT_SECONDS)
    return resolver


def txt_records(name: str) -> list[str]:
    try:
        answer = _resolver().resolve(name, "TXT")
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    except (dns.exception.Timeout, dns.resolver.NoNameservers) as exc:
        raise Unavailable(
            f"the DNS lookup of {name} failed ({exc.__class__.__name__}); try again in a minute", field="domain"
        ) from None
    # a TXT record may be split in strings of at most 255 bytes: they are one value
    return [b"".join(record.strings).decode("utf-8", "replace") for record in answer]
