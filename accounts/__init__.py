#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to accounts.
PUBLIC_MODULES: tuple[str, ...] = (
    "accounts.models",
    "accounts.access",
    "accounts.services",
    "accounts.selectors",
    "accounts.plans.catalogue",
    "accounts.events",
    "accounts.api_base",
    "accounts.views_base",
    "accounts.mcp_auth",
    "accounts.management.base",
)
