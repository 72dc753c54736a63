#!/usr/bin/env python3
"""Cursor's entry to the ReasoningBank hooks (docs/cursor.md), as integrations/cursor/hooks.json runs it:

    reasoningbank_cursor.py session-start   sessionStart: the project's memory block, as additional_context
    reasoningbank_cursor.py capture         stop, sessionEnd: the agent transcript queued for distillation

(Cursor's prompt hook cannot add context: the rule in reasoningbank.mdc asks the agent to search.) The
hooks themselves are the dispatcher every agent's hooks share (docs/security/hooks.md#one-dispatcher;
Cursor's adapter: reasoningbank_hooks/agents/cursor.py). It lives in the Claude Code plugin's folder
because installing that plugin copies its folder alone. Python's standard library only; a hook prints its
answer on stdout, at most one line on stderr, and always exits 0.
"""

import sys
from pathlib import Path

HOOKS = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"  # where the reasoningbank_hooks package is
sys.path.insert(0, str(HOOKS))

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("cursor", sys.argv))
