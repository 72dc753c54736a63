"""The service's own credentials seen where they must never be: revoked on sight
(docs/security/secret-scrubbing.md#our-own-credentials-are-revoked-on-sight).

The scrubber (``reasoningbank.scrubbing``, pure) hands back the raw values of our own credentials it
found in a text (``ScrubResult.own_tokens``): API and OAuth tokens (``rb_``, ``rbo_``, ``rbr_``) and
webhook signing secrets (``whsec_``). Each app that issues one registers, when it loads, a revoker that
knows its own (accounts: the tokens; webhooks: the signing secrets), and whoever scrubbed a text calls
``leaked_credentials_revoke`` — the memories app for what enters the bank, the LLM client for what
leaves for a provider — without importing the apps that issued them (docs/architecture.md#the-never-arrows).

A revoker touches only what an exact raw value matches, and writes its audit row in the
credential's own organization; a value that matches nothing (a look-alike, another service's secret
with the same prefix) revokes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

__pure__ = True  # a registry of plain callables: Django-free (tests/test_import_contracts.py)


CredentialRevoker = Callable[..., int]
_REVOKERS: dict[str, CredentialRevoker] = {}


def leak_revoker_register(name: str, revoker: CredentialRevoker) -> None:
    """``revoker(raws: Sequence[str], *, seen_in: str) -> int`` revokes those of ``raws`` that are its
    own and live; ``name`` (the app's) keeps a reload from registering it twice."""
    _REVOKERS[name] = revoker


def leaked_credentials_revoke(raws: Iterable[str], *, seen_in: str) -> int:
    """Every registered revoker over ``raws`` (repeats dropped); ``seen_in`` names where they were seen
    (the operation, for the audit row). Returns how many credentials were revoked."""
    values: Sequence[str] = tuple(dict.fromkeys(raw for raw in raws if raw))
    if not values:
        return 0
    return sum(revoker(values, seen_in=seen_in) for revoker in _REVOKERS.values())
