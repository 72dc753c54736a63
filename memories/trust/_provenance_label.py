"""A memory's one-line source label for the injected blocks ("recorded by alice@acme.test via claude-code
2.1 · 2026-11-30"), read from its provenance (docs/security/memory-poisoning.md, its provenance section) and, for a
memory older than provenance (``{}``), from the columns that said where it came from before: ``origin``,
``created_by_user``, ``created_by_token`` and ``created_at``.

The provenance package describes provenance for every reader (``memories/trust/provenance.py``'s
``label``); this stand-in keeps the injection's framing independent of it until both are in one tree,
and reads only the keys the design fixes. The label is shortened and made safe where it is placed
(``memories/trust/framing.py``'s ``attribute_safe``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

HOW_WORDS = {"recorded": "recorded", "distilled": "distilled", "consolidated": "synthesised", "extracted": "extracted"}


def label(memory: Any) -> str:
    """Who wrote ``memory``, how, through which client and when, on one line."""
    provenance = getattr(memory, "provenance", None) or {}
    if isinstance(provenance, dict) and provenance.get("how"):
        return _from_provenance(provenance, getattr(memory, "created_at", None))
    return _from_columns(memory)


def _from_provenance(provenance: dict[str, Any], created_at: datetime | None) -> str:
    by = _mapping(provenance.get("by"))
    client = _mapping(provenance.get("client"))
    parts = [str(provenance["how"])]
    who = _who(by)
    if who:
        parts.append(f"by {who}")
    name = str(client.get("name") or "").strip()
    if name:
        version = ".".join(str(client.get("version") or "").split(".")[:2])
        parts.append(f"via {name} {version}".rstrip())
    when = str(provenance.get("at") or "")[:10] or (f"{created_at:%Y-%m-%d}" if created_at else "")
    return " ".join(parts) + (f" · {when}" if when else "")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _who(by: dict[str, Any]) -> str:
    if by.get("email"):
        return str(by["email"])
    if by.get("oauth_app_name"):
        return f"app {by['oauth_app_name']}"
    if by.get("token_prefix"):
        named = f" ({by['token_label']})" if by.get("token_label") else ""
        return f"token {by['token_prefix']}{named}"
    return "the service" if by.get("kind") == "system" else ""


def _from_columns(memory: Any) -> str:
    how = HOW_WORDS.get(str(getattr(memory, "origin", "") or ""), "recorded")
    user = getattr(memory, "created_by_user", None)
    token = getattr(memory, "created_by_token", None)
    if user is not None and user.email:
        who = f" by {user.email}"
    elif token is not None:
        who = f" by token {token.prefix}" + (f" ({token.label})" if token.label else "")
    elif how == "synthesised":
        who = " by consolidation"
    else:
        who = ""
    created_at = getattr(memory, "created_at", None)
    return f"{how}{who}" + (f" · {created_at:%Y-%m-%d}" if created_at else "")
