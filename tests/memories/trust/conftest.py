"""What the trust tests share: an OAuth app (``claude``), the principal of its access token in an org,
memories written by a principal through the one insert every path takes, the organization's poisoning
policy set in one call, and a count of the flagged writes reported to the write limits."""

from __future__ import annotations

from typing import Any

import pytest
from oauth2_provider.models import get_application_model

from accounts.access import Principal
from accounts.models import OAuthConnection, Organization
from memories.core.services import MemoryDraft, memories_create
from memories.models import Memory


@pytest.fixture
def claude(db: Any) -> Any:
    """An OAuth client registered with the server (not tenant data: any org's member may connect it)."""
    application = get_application_model()
    return application.objects.create(
        name="Claude Desktop", client_type=application.CLIENT_PUBLIC,
        authorization_grant_type=application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1:7777/cb",
    )  # fmt: skip


def app_principal(org: Organization, user: Any, application: Any) -> Principal:
    """What an OAuth access token of ``application``, connected by ``user`` in ``org``, acts as."""
    connection = OAuthConnection.objects.create(
        organization=org, user=user, application=application, scopes=["memories:read", "memories:write"]
    )
    return Principal(
        organization=org, scopes=frozenset({"memories:read", "memories:write"}), user=user,
        oauth_connection=connection,
    )  # fmt: skip


def written_by(principal: Principal, project: Any, title: str, **fields: Any) -> Memory:
    """A memory ``principal`` writes now (``fields`` then set on the row: flags, trust, …)."""
    draft = MemoryDraft(title=title, description="When it applies", content=f"{title}: the lesson.", outcome="success",
                        tags=[])  # fmt: skip
    (memory,) = memories_create(principal=principal, drafts=[draft], project=project)
    if fields:
        Memory.objects.filter(pk=memory.pk).update(**fields)
    return memory


@pytest.fixture
def set_policy(db: Any) -> Any:
    """``set_policy(org, "flag", trusted_hosts=[...])``: the organization's policy, saved and reloaded."""

    def apply(org: Organization, policy: str, **fields: Any) -> None:
        Organization.objects.filter(pk=org.pk).update(poisoning_policy=policy, **fields)
        org.refresh_from_db()

    return apply


@pytest.fixture
def flagged_notes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every principal ``flagged_write_note`` is called with, in order (the write limits count these)."""
    calls: list[Any] = []
    monkeypatch.setattr("memories.trust.services.flagged_write_note", calls.append)
    monkeypatch.setattr("memories.transfer.services.flagged_write_note", calls.append)
    return calls
