"""What the quarantine tests share: the organization's poisoning policy set in one call, and a count of
the flagged writes reported to the write limits."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organization


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
