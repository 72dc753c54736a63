"""Webhooks: where deliveries may go, how long one may take, how often it is retried, and when a
subscription that keeps failing is switched off (docs/webhooks.md)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_duration, env_int, env_str

# development only: deliveries to private, loopback and link-local addresses (a receiver on
# localhost); in production they would let a tenant make the service post into its own network
WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", False)
# one deadline for the whole attempt (name lookup, connect, TLS, send, the answer's status and headers),
# not per read: a receiver that dribbles a byte a second is cut here (docs/security/worker-fairness.md)
WEBHOOK_TIMEOUT = env_duration("WEBHOOK_TIMEOUT", "5s")
# deliveries run on a worker of their own (a second django-q2 cluster, started by scripts/run.sh), so
# that slow receivers never hold the slots sessions and consolidation runs need; one organization has at
# most WEBHOOK_ORG_CONCURRENCY deliveries in flight, the others wait their turn in order
WEBHOOKS_CLUSTER = "reasoningbank-webhooks"  # its queue's name; Q_CLUSTER_NAME of its qcluster
WEBHOOK_WORKERS = env_int("WEBHOOK_WORKERS", 4, minimum=1, maximum=64)
WEBHOOK_ORG_CONCURRENCY = env_int("WEBHOOK_ORG_CONCURRENCY", 2, minimum=1, maximum=64)
# attempts per delivery, the first included; the n-th retry waits WEBHOOK_RETRY_BASE × 4^(n-1)
# (30 s, 2 min, 8 min, 32 min, ~2 h with the defaults)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6, minimum=1, maximum=10)
WEBHOOK_RETRY_BASE = env_duration("WEBHOOK_RETRY_BASE", "30s")
# a subscription whose deliveries have failed (every attempt) for this long, without a success
# between, is switched off and marked "failing"; an admin re-enables it
WEBHOOK_DISABLE_AFTER = env_duration("WEBHOOK_DISABLE_AFTER", "3d")
# The CA certificates a receiver's TLS certificate may chain to, besides the system's: a development CA
# for a receiver on https://localhost (docs/webhooks.md#trying-webhooks-locally). The sender's HTTP
# client ignores the environment (trust_env=False: a proxy variable would connect by name, past the
# address guard), so OpenSSL's SSL_CERT_FILE / SSL_CERT_DIR are read here, explicitly, and nothing else
# of the environment is. All of them add to the system's CAs rather than replace them: the same sender
# also posts to public receivers. WEBHOOKS_CA_BUNDLE (ours, deliveries only) must exist at start-up;
# OpenSSL's two are checked when a delivery loads them (a wrong one fails the attempt, naming it).
WEBHOOKS_CA_BUNDLE = os.path.expanduser(env_str("WEBHOOKS_CA_BUNDLE"))
if WEBHOOKS_CA_BUNDLE and not os.path.exists(WEBHOOKS_CA_BUNDLE):
    raise ImproperlyConfigured(
        f"WEBHOOKS_CA_BUNDLE must be a PEM file of CA certificates or a directory of them prepared with "
        f"`openssl rehash`; {WEBHOOKS_CA_BUNDLE!r} does not exist"
    )
WEBHOOKS_SSL_CERT_FILE = env_str("SSL_CERT_FILE")
WEBHOOKS_SSL_CERT_DIR = env_str("SSL_CERT_DIR")
