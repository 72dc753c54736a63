"""Write limits and the suspension of a principal whose writes the detector keeps flagging
(docs/security/memory-poisoning.md, the write limits).

A placeholder with the call's final signature, so that every flagged write already reports itself: the
real module (counting flagged writes in a window and suspending the token's or app's writes) replaces it.
"""

from __future__ import annotations

from accounts.access import Principal


def flagged_write_note(principal: Principal) -> None:
    """Count one flagged write by ``principal`` (the placeholder counts nothing)."""
    return None
