"""What may be injected automatically (docs/security/memory-poisoning.md#injection-policy): the one place
that turns an organization's ``injection_policy`` into a filter on memories, and the reads of the
review that clears a memory for injection.

Everything the service puts in an agent's context without the agent asking — the session-start block
(``memory_context``: its summaries and the memories it falls back to) and the hooks' per-prompt recall
(a search with ``inject``) — holds only memories this filter passes:

- ``trusted`` (the default): active, and ``trust`` is ``trusted`` — decided from the provenance when the
  memory was written (a member or above, an OAuth app an admin trusts), or set by a person's review;
- ``reviewed``: active, and a person reviewed it (``reviewed_at``);
- ``all``: every active memory.

An explicit ``memory_search`` still returns every active memory (each with its source): an agent that
asks sees what there is; only what nobody asked for is held to the policy."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts.access import Principal, access_filter
from accounts.models import Organization
from memories.core.selectors import reach_for
from memories.models import Memory
from memories.trust.provenance_selectors import memory_source, memory_sources

INJECTION_POLICIES = tuple(policy for policy, _ in Organization.INJECTION_CHOICES)
# the policy's condition on a memory row beside "active", as SQL over a memory alias (no parameters)
_POLICY_SQL = {
    Organization.INJECTION_TRUSTED: "{m}.trust = 'trusted'",
    Organization.INJECTION_REVIEWED: "{m}.reviewed_at IS NOT NULL",
    Organization.INJECTION_ALL: "TRUE",
}


def injection_policy_of(organization: Organization) -> str:
    """The organization's policy; an unknown stored value (a hand edit) counts as the strictest."""
    policy = organization.injection_policy
    return policy if policy in _POLICY_SQL else Organization.INJECTION_REVIEWED


def injection_q(organization: Organization, *, prefix: str = "") -> Q:
    """The ORM filter on memories (or, with ``prefix="memory__"``, on rows pointing at one) that the
    organization's policy lets be injected: active, and trusted, reviewed or any."""
    policy = injection_policy_of(organization)
    q = Q(**{f"{prefix}state": Memory.STATE_ACTIVE})
    if policy == Organization.INJECTION_TRUSTED:
        q &= Q(**{f"{prefix}trust": Memory.TRUST_TRUSTED})
    elif policy == Organization.INJECTION_REVIEWED:
        q &= Q(**{f"{prefix}reviewed_at__isnull": False})
    return q


def injection_sql(policy: str, *, alias: str = "m") -> str:
    """The same filter as SQL over the memory alias ``alias``, for the raw-SQL search: active, and what
    ``policy`` asks (an unknown one: reviewed). A fixed string, no parameters."""
    condition = _POLICY_SQL.get(policy, _POLICY_SQL[Organization.INJECTION_REVIEWED])
    return f"{alias}.state = 'active' AND " + condition.format(m=alias)


def injection_labels(principal: Principal, memory_ids: list[str]) -> dict[str, str]:
    """Each memory's one-line source label (``recorded by alice@acme.test via claude-code 2.1 · 2026-11-30``),
    by id (only the memories the principal reaches)."""
    if not memory_ids:
        return {}
    reached = access_filter(Memory, principal).filter(pk__in=memory_ids).only("id", "organization_id")
    return {memory_id: source["label"] for memory_id, source in memory_sources(reached).items()}


def memory_label(memory: Memory) -> str:
    """One memory's source label."""
    return str(memory_source(memory)["label"])


def injection_pending_list(principal: Principal) -> QuerySet[Memory]:
    """Active memories waiting for a person's review before they are injected (``trust`` pending), in
    the principal's reach, oldest first: the review queue's "Cleared for injection" list."""
    return (
        access_filter(Memory, principal)
        .filter(reach_for(principal).memory_q(), state=Memory.STATE_ACTIVE, trust=Memory.TRUST_PENDING)
        .select_related("project", "team", "created_by_user", "created_by_token")
        .defer("embedding")
        .order_by("created_at", "id")
    )
