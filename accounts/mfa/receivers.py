"""allauth.mfa's signals → audit rows (connected in ``accounts/apps.py``)."""

from __future__ import annotations

from typing import Any

from accounts.mfa.services import mfa_change_audit


def mfa_authenticator_added(sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any) -> None:
    mfa_change_audit(user=user, change="added", authenticator=authenticator)


def mfa_authenticator_removed(sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any) -> None:
    mfa_change_audit(user=user, change="removed", authenticator=authenticator)


def mfa_authenticator_reset(sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any) -> None:
    mfa_change_audit(user=user, change="reset", authenticator=authenticator)
