"""The organization's trust policy (docs/security/memory-poisoning.md#the-trust-policy): what the
instruction-smell detector does with a flagged write (``poisoning_policy``), what the hooks and
memory_context inject automatically (``injection_policy``), and the hosts a fetched script may be piped
into a shell from (``trusted_hosts``). One service changes any of them, for REST and the dashboard alike:
checked whole before anything is written, each changed field audited with its old and new value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN, Organization
from accounts.services import audit_record
from memories.trust.selectors_policy import INJECTION_POLICIES, POISONING_POLICIES, TRUST_POLICY_FIELDS
from reasoningbank.errors import Forbidden, InvalidInput
from reasoningbank.poisoning.remote_code import TrustedHostInvalid, trusted_hosts_clean


def _choice(field: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidInput(f"{field} must be one of {', '.join(choices)} (got {value!r})", field=field)
    return value


def _hosts(value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(entry, str) for entry in value):
        raise InvalidInput("trusted_hosts must be a list of host names", field="trusted_hosts")
    try:
        return trusted_hosts_clean(value)
    except TrustedHostInvalid as exc:
        raise InvalidInput(f"trusted_hosts: {exc.entry!r} — {exc.reason}", field="trusted_hosts") from None


def trust_policy_clean(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` checked and normalised (trusted hosts cleaned, duplicates dropped), or a 400 naming
    the first bad field and, for a host, the entry and what to write instead."""
    unknown = sorted(set(changes) - set(TRUST_POLICY_FIELDS))
    if unknown:
        raise InvalidInput(
            f"unknown field {unknown[0]!r}; the trust policy has {', '.join(TRUST_POLICY_FIELDS)}", field=unknown[0]
        )
    cleaned: dict[str, Any] = {}
    if "poisoning_policy" in changes:
        cleaned["poisoning_policy"] = _choice("poisoning_policy", changes["poisoning_policy"], POISONING_POLICIES)
    if "injection_policy" in changes:
        cleaned["injection_policy"] = _choice("injection_policy", changes["injection_policy"], INJECTION_POLICIES)
    if "trusted_hosts" in changes:
        cleaned["trusted_hosts"] = _hosts(changes["trusted_hosts"])
    return cleaned


@transaction.atomic
def trust_policy_set(*, principal: Principal, changes: Mapping[str, Any]) -> Organization:
    """Change any of the organization's ``poisoning_policy``, ``injection_policy`` and ``trusted_hosts``
    (the fields not given are left as they are). Needs the ``admin`` scope and a principal for the whole
    organization (a token restricted to some projects cannot change what every project lives under).
    Nothing is written unless every given field is valid. One audit row per field that changed,
    ``organization.<field>`` with ``from`` and ``to``; a value set to what it is writes nothing."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden("changing the trust policy needs the admin role (an admin or owner, or an admin token)")
    if principal.is_restricted:  # the policy is the whole organization's
        raise Forbidden("a token restricted to some projects cannot change the organization's trust policy")
    cleaned = trust_policy_clean(changes)
    organization = Organization.objects.select_for_update().get(pk=principal.organization.pk)
    changed = []
    for field, value in cleaned.items():
        previous = getattr(organization, field)
        if field == "trusted_hosts":
            previous = list(previous or [])
        if previous == value:
            continue
        setattr(organization, field, value)
        changed.append(field)
        audit_record(
            organization=organization,
            actor=principal,
            verb=f"organization.{field}",
            target=organization,
            data={"from": previous, "to": value},
        )
    if changed:
        organization.save(update_fields=changed)
    return organization
