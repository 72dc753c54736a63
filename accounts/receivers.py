from typing import Any

from accounts.services import user_signup_provision


def provision_org_on_signup(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Every self-service signup gets its own org (on DEFAULT_PLAN) with the new user as owner."""
    user_signup_provision(user=user)
