"""The hooks' package under integrations/ (reasoningbank_hooks: the dispatcher every agent's hook runs)
imported in the test's own process, for the tests of what a hook makes of a client's file or event
without running it as its client does (that is tests/integrations/). Plain Python, no Django.

The package is imported the way the entry scripts import it: its folder on ``sys.path``, then by name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INTEGRATIONS = REPO / "integrations"
HOOKS = INTEGRATIONS / "claude-code" / "hooks"  # the package's folder, inside the Claude Code plugin
PACKAGE = HOOKS / "reasoningbank_hooks"
# each agent's entry script, as its client's hook file runs it
ENTRIES = {
    "claude-code": HOOKS / "reasoningbank_hook.py",
    "codex": INTEGRATIONS / "codex" / "reasoningbank_codex.py",
    "cursor": INTEGRATIONS / "cursor" / "reasoningbank_cursor.py",
    "gemini-cli": INTEGRATIONS / "gemini-cli" / "reasoningbank_gemini.py",
}
GEMINI_HOOK = ENTRIES["gemini-cli"]

if str(HOOKS) not in sys.path:
    sys.path.insert(0, str(HOOKS))

from reasoningbank_hooks import budget, posting, reading, repository, spool  # noqa: E402
from reasoningbank_hooks.agents import ADAPTERS  # noqa: E402
from reasoningbank_hooks.handlers import HANDLERS  # noqa: E402

__all__ = ["ADAPTERS", "HANDLERS", "budget", "posting", "reading", "repository", "spool"]


def transcript_read(agent: str, path: Path | str, limit: int = 500_000) -> tuple[str, int]:
    """What ``agent``'s capture sends of the transcript at ``path`` within ``limit`` bytes (the trace) and
    how many conversation messages it counted, read with the hook's budget starting now."""
    budget.clock_start()
    trace, count = ADAPTERS[agent].transcript(str(path), limit)
    return str(trace), int(count)


def gemini_recording_read(path: Path, limit: int = 500_000) -> tuple[str, int]:
    """What the Gemini CLI hook sends of the recording at ``path`` (``trace``) within ``limit`` bytes, and
    how many conversation messages it counted. The hook's deadline is the one its environment sets
    (``REASONINGBANK_TIMEOUT``); a test on a slow machine raises it."""
    assert "REASONINGBANK_TIMEOUT" in os.environ, "set REASONINGBANK_TIMEOUT: a test is not the hook's deadline"
    return transcript_read("gemini-cli", path, limit)
