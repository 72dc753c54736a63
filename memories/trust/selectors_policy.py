"""Reads of the organization's trust policy (docs/security/memory-poisoning.md#the-trust-policy): its
three settings as one resource, for REST and Settings → Trust."""

from __future__ import annotations

from typing import Any

from accounts.models import Organization
from memories.trust.selectors_injection import INJECTION_POLICIES

POISONING_POLICIES = tuple(policy for policy, _ in Organization.POISONING_CHOICES)
TRUST_POLICY_FIELDS = ("poisoning_policy", "injection_policy", "trusted_hosts")

__all__ = ["INJECTION_POLICIES", "POISONING_POLICIES", "TRUST_POLICY_FIELDS", "trust_policy_get"]


def trust_policy_get(organization: Organization) -> dict[str, Any]:
    """``{poisoning_policy, injection_policy, trusted_hosts}`` as stored."""
    return {
        "poisoning_policy": organization.poisoning_policy,
        "injection_policy": organization.injection_policy,
        "trusted_hosts": list(organization.trusted_hosts or []),
    }
