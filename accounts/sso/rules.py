"""The rules of single sign-on that need no database: domains, the TXT record that proves one, and which
role a person's groups give (docs/identity.md#single-sign-on)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__pure__ = True

# the TXT record's name under the domain, and its value's prefix (the token follows the "=")
VERIFICATION_LABEL = "_reasoningbank-challenge"
VERIFICATION_PREFIX = "reasoningbank-domain-verification="
# the roles an identity provider's groups may give, weakest first; never owner
ROLE_RANK = {"viewer": 0, "member": 1, "admin": 2}

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def domain_normalise(value: str) -> str:
    """A bare domain such as ``acme.com`` (lower case, no scheme, path, ``@`` or trailing dot), or ValueError
    naming what to type instead."""
    domain = value.strip().lower().rstrip(".")
    if domain.startswith("@"):
        domain = domain[1:]
    if not domain or len(domain) > 253 or "." not in domain:
        raise ValueError("enter a domain such as example.com (the part of the address after @)")
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError("enter a domain such as example.com (the part of the address after @)") from None
    if not all(_LABEL.match(label) for label in domain.split(".")):
        raise ValueError("enter a domain such as example.com (letters, digits, hyphens and dots only)")
    return domain


def email_domain(email: str) -> str:
    """The domain of an address, lower case ("" when it has none)."""
    _, at, domain = email.strip().rpartition("@")
    return domain.lower().rstrip(".") if at else ""


def verification_record_name(domain: str) -> str:
    return f"{VERIFICATION_LABEL}.{domain}"


def verification_record_value(token: str) -> str:
    return f"{VERIFICATION_PREFIX}{token}"


def verification_found(records: Iterable[str], token: str) -> bool:
    """Whether one of a name's TXT records is the organization's verification value."""
    wanted = verification_record_value(token)
    return any(record.strip() == wanted for record in records)


def claim_values(data: Mapping[str, Any], claim: str) -> list[str]:
    """The values of ``claim`` in what an identity provider said about a person: an OpenID Connect
    userinfo / ID token (a list or one string), or SAML attributes (always lists)."""
    if not claim:
        return []
    sources: list[Mapping[str, Any]] = []
    for key in ("userinfo", "id_token"):  # allauth keeps OIDC's two documents side by side
        if isinstance(data.get(key), Mapping):
            sources.append(data[key])
    sources.append(data)
    for source in sources:
        value = source.get(claim)
        if value is None:
            continue
        if isinstance(value, str):
            return [value]
        if isinstance(value, list | tuple):
            return [str(item) for item in value if isinstance(item, str | int)]
    return []


def role_for_groups(groups: Iterable[str], role_map: Mapping[str, str]) -> str | None:
    """The strongest role a person's groups map to (viewer < member < admin), or None when none is mapped."""
    roles = [role_map[group] for group in groups if role_map.get(group) in ROLE_RANK]
    return max(roles, key=ROLE_RANK.__getitem__) if roles else None


def role_map_parse(text: str) -> dict[str, str]:
    """The mapping table as typed in the dashboard: one ``group = role`` a line, or ValueError naming
    the line to fix."""
    mapping: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        group, equals, role = line.rpartition("=")
        group, role = group.strip(), role.strip().lower()
        if not equals or not group:
            raise ValueError(f"line {number}: write one mapping a line, as group = role")
        if role not in ROLE_RANK:
            raise ValueError(f"line {number}: the role must be viewer, member or admin, not {role!r}")
        mapping[group] = role
    return mapping


def role_map_text(mapping: Mapping[str, str]) -> str:
    return "\n".join(f"{group} = {role}" for group, role in sorted(mapping.items()))
