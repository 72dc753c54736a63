"""Plans as data (``catalogue``: features, limits, the usage counters other apps register), the plan change
and Settings → Plan & limits (docs/tenancy.md#plans-and-the-default-plan)."""
