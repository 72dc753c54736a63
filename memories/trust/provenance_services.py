"""The organization's trusted OAuth clients (docs/security/memory-poisoning.md#trusted-oauth-clients): what
an agent connected through an OAuth app writes is injected without a review only when an admin trusts the
app's ``client_id``. Trusting one clears that app's waiting memories that the detector did not flag; taking
the trust back changes what its later writes get, not what was cleared.

The list is the organization's (``Organization.trusted_oauth_clients``), written here because trusting a
client changes memories, which the accounts app does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN, Organization
from accounts.selectors import oauth_application
from accounts.services import audit_record
from memories.models import Memory
from memories.trust import provenance as p
from reasoningbank.errors import Forbidden, InvalidInput

CLIENT_ID_MAX = 100  # Organization.trusted_oauth_clients' items


@dataclass(frozen=True)
class ClientTrustChange:
    client_id: str
    trusted: bool
    clients: list[str]  # the organization's trusted clients after the change
    memories_cleared: int  # pending memories of this client now trusted (0 when the trust was taken back)


def _client_id_clean(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            "client_id is required: the OAuth client's id (Settings → Connected apps)", field="client_id"
        )
    value = value.strip()
    if len(value) > CLIENT_ID_MAX or "\x00" in value:
        raise InvalidInput(f"client_id must be at most {CLIENT_ID_MAX} characters, without NUL", field="client_id")
    return value


def oauth_client_trust_set(*, principal: Principal, client_id: Any, trusted: Any) -> ClientTrustChange:
    """Trust (or stop trusting) the OAuth client ``client_id`` in the principal's organization; admins only,
    audited (``org.oauth_client_trust`` / ``org.oauth_client_distrust``). Trusting it clears its pending
    memories that carry no flag: recorded or distilled through it by a member or above."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"trusting an OAuth client needs the '{SCOPE_ADMIN}' scope (organization admins)")
    if principal.is_restricted:
        raise Forbidden("this token is restricted to some projects/teams; the trusted clients are the whole org's")
    client_id = _client_id_clean(client_id)
    if not isinstance(trusted, bool):
        raise InvalidInput("trusted must be true or false", field="trusted")
    application = oauth_application(client_id)
    if trusted and application is None:
        raise InvalidInput(
            f"no OAuth client {client_id!r} is registered with this server: copy its id from Settings → Connected "
            "apps once a member has connected it",
            field="client_id",
        )
    with transaction.atomic():
        org = Organization.objects.select_for_update().get(pk=principal.organization.pk)
        clients = list(org.trusted_oauth_clients)
        changed = (client_id not in clients) if trusted else (client_id in clients)
        if trusted and changed:
            clients.append(client_id)
        elif changed:
            clients.remove(client_id)
        if changed:
            org.trusted_oauth_clients = clients
            org.save(update_fields=["trusted_oauth_clients"])
            principal.organization.trusted_oauth_clients = clients
        cleared = _pending_clear(org, client_id) if trusted else 0
        if changed or cleared:
            audit_record(
                organization=org,
                actor=principal,
                verb="org.oauth_client_trust" if trusted else "org.oauth_client_distrust",
                data={
                    "client_id": client_id,
                    "app": application.name if application is not None else "",
                    "memories_cleared": cleared,
                },
            )
    return ClientTrustChange(client_id=client_id, trusted=trusted, clients=clients, memories_cleared=cleared)


def _pending_clear(org: Organization, client_id: str) -> int:
    """The client's pending memories the detector did not flag, trusted now: those it recorded, or that
    were distilled from sessions it handed in, for a member or above (as ``memory_trust_decide`` would
    have decided had the client been trusted then)."""
    return (
        Memory.objects.filter(
            organization=org,
            trust=Memory.TRUST_PENDING,
            flags=[],
            provenance__how__in=[p.HOW_RECORDED, p.HOW_DISTILLED],
            provenance__by__kind=p.BY_OAUTH,
            provenance__by__oauth_client_id=client_id,
            provenance__by__role__in=list(p.WRITER_ROLES),
        ).update(trust=Memory.TRUST_TRUSTED)
    )
