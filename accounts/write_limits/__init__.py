"""Write limits (docs/security/memory-poisoning.md#write-limits): what one token, connected app or member and
the organization may write per minute and per day, the suspension after a burst of flagged writes, lifting
it (REST and Settings), the dashboard's suspension banners."""
