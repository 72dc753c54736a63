"""The review for injection (docs/security/memory-poisoning.md#injection-policy): an admin clears a
memory that waits for review (``trust`` pending) for automatic injection. Needs the ``admin`` scope (an
admin or owner on the dashboard, an admin token over REST) and is audited. The policy itself is set with
the rest of the trust policy (``services_policy.trust_policy_set``)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN
from accounts.services import audit_record
from memories.core.selectors import memory_is_writable
from memories.models import Memory
from reasoningbank.errors import Conflict, Forbidden


def _admin_require(principal: Principal, what: str) -> None:
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"{what} needs the admin role (an admin or owner, or a token with the admin scope)")


def _reviewer(principal: Principal) -> object | None:
    """The person behind the review: the signed-in admin, or the person who created the admin token."""
    if principal.user is not None:
        return principal.user
    return getattr(principal.token, "created_by", None) if principal.token is not None else None


@transaction.atomic
def memory_injection_clear(*, principal: Principal, memory: Memory) -> Memory:
    """``memory`` (active, waiting for review) becomes ``trusted``: from now on the hooks and
    ``memory_context`` may inject it. The reviewer and the time are kept on it; audited
    ``memory.injection_clear``. A memory in quarantine is approved in the quarantine review instead,
    an archived one is never injected, and a trusted one has nothing to clear: each a 409 saying so."""
    _admin_require(principal, "clearing a memory for injection")
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    memory = Memory.objects.select_for_update().get(pk=memory.pk, organization=principal.organization)
    if memory.state != Memory.STATE_ACTIVE:
        where = (
            "approve it in the quarantine review first"
            if memory.state == Memory.STATE_QUARANTINED
            else "only an active memory is injected"
        )
        raise Conflict(f"memory {memory.id} is {memory.state}: {where}", field="memory_id")
    if memory.trust == Memory.TRUST_TRUSTED:
        raise Conflict(f"memory {memory.id} is already trusted for injection: nothing to clear", field="memory_id")
    memory.trust = Memory.TRUST_TRUSTED
    memory.reviewed_by = _reviewer(principal)  # type: ignore[assignment]
    memory.reviewed_at = timezone.now()
    memory.save(update_fields=["trust", "reviewed_by", "reviewed_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.injection_clear",
        target=memory,
        data={"was": Memory.TRUST_PENDING, "reviewed_by": getattr(memory.reviewed_by, "email", None)},
    )
    return memory
