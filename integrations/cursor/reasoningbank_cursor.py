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

import os
import sys

# where the reasoningbank_hooks package is (os.path, not pathlib: a hook process pays for every import)
HOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "claude-code", "hooks")
sys.path.insert(0, HOOKS)

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("cursor", sys.argv))
