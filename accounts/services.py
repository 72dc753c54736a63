"""The writes of accounts that the other apps call (docs/architecture.md#app-interfaces): the audit log,
and what an import or a benchmark creates (organizations, teams, projects, tokens), and the write limits
every write path charges. The services themselves live in the feature packages; accounts' own modules
import them from there, never from here (this module imports every feature, so a feature importing it
would import itself)."""

from __future__ import annotations

from accounts.audit import audit_record, audit_record_many
from accounts.organizations.services import organization_create, project_create, team_create
from accounts.tokens.services import token_create
from accounts.write_limits.services import flagged_write_note, write_admit

__all__ = [
    "audit_record",
    "audit_record_many",
    "flagged_write_note",
    "organization_create",
    "project_create",
    "team_create",
    "token_create",
    "write_admit",
]
