"""The reads of accounts that the other apps call (docs/architecture.md#app-interfaces): the
organizations a plan-gated job walks through, an OAuth client by its id, the LLM spenders the operator's
page lists, the price table an LLM estimate is priced with, the write-suspension banners of the dashboard,
the audit rows the ``audit.event`` webhook streams, the audit rows about changes (the overview's activity).
The selectors themselves live in the feature packages; accounts' own modules import them from there, never
from here."""

from __future__ import annotations

from accounts.audit_log.selectors import audit_changes_only, audit_events_describe
from accounts.budgets.selectors import PriceTable, top_spenders
from accounts.oauth.selectors import oauth_application
from accounts.organizations.selectors import organizations_with_feature, project_by_repository
from accounts.write_limits.selectors import write_suspension_banners

__all__ = [
    "PriceTable",
    "audit_changes_only",
    "audit_events_describe",
    "oauth_application",
    "organizations_with_feature",
    "project_by_repository",
    "top_spenders",
    "write_suspension_banners",
]
