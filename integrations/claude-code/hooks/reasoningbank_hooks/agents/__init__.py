"""The agent clients the hooks serve, one adapter each (base.py says what an adapter holds). ``ADAPTERS``
is the registry the dispatcher looks an entry script's agent up in; a new client is a module here, an
entry in it, an entry script and its hook file (docs/security/hooks.md#one-dispatcher)."""

from __future__ import annotations

from . import claude_code, codex, cursor, gemini_cli
from .base import Adapter

ADAPTERS: dict[str, Adapter] = {
    module.ADAPTER.name: module.ADAPTER for module in (claude_code, codex, cursor, gemini_cli)
}
