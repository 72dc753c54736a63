#!/usr/bin/env python3
"""Claude Code's entry to the ReasoningBank hooks (docs/claude-code.md), as the plugin's hooks.json runs it:

    reasoningbank_hook.py session-start   SessionStart: the project's memory block
    reasoningbank_hook.py prompt          UserPromptSubmit: the memories new to this session that fit the prompt
    reasoningbank_hook.py capture         Stop, PreCompact, SessionEnd: the transcript queued for distillation
    reasoningbank_hook.py tool            PreToolUse (a file tool), PostToolUse and PostToolUseFailure (Bash): the
                                          memories about that file or that error, new to this session

The hooks themselves are the dispatcher beside this file (reasoningbank_hooks/, shared by every agent's
hooks; Claude Code's adapter: reasoningbank_hooks/agents/claude_code.py). Python's standard library only;
a hook prints its answer on stdout, at most one line on stderr, and always exits 0.
"""

import os
import sys

HOOKS = os.path.dirname(os.path.realpath(__file__))  # where the reasoningbank_hooks package is
sys.path.insert(0, HOOKS)  # also when the interpreter does not add a script's folder (PYTHONSAFEPATH)

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("claude-code", sys.argv))
