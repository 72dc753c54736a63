"""The audit log people read (docs/identity.md#the-audit-log): the verbs it records, the sign-in rows, the
filtered log for the dashboard page, its CSV and JSON export and ``GET /api/v1/audit``, and the retention per
plan. The rows are written by ``accounts/audit.py``, which every feature and app records through."""
