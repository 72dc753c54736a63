"""Webhooks: where deliveries may go, how long one may take, how often it is retried, and when a
subscription that keeps failing is switched off (docs/webhooks.md)."""

from __future__ import annotations

from reasoningbank.env import env_bool, env_duration, env_int

# development only: deliveries to private, loopback and link-local addresses (a receiver on
# localhost); in production they would let a tenant make the service post into its own network
WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", False)
# one deadline per attempt (connect + send + the answer's status line): a slow receiver holds a worker
WEBHOOK_TIMEOUT = env_duration("WEBHOOK_TIMEOUT", "5s")
# attempts per delivery, the first included; the n-th retry waits WEBHOOK_RETRY_BASE × 4^(n-1)
# (30 s, 2 min, 8 min, 32 min, ~2 h with the defaults)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6, minimum=1, maximum=10)
WEBHOOK_RETRY_BASE = env_duration("WEBHOOK_RETRY_BASE", "30s")
# a subscription whose deliveries have failed (every attempt) for this long, without a success
# between, is switched off and marked "failing"; an admin re-enables it
WEBHOOK_DISABLE_AFTER = env_duration("WEBHOOK_DISABLE_AFTER", "3d")
