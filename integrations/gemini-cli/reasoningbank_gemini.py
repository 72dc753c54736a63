#!/usr/bin/env python3
"""Gemini CLI's entry to the ReasoningBank hooks (docs/gemini-cli.md), as integrations/gemini-cli/settings.json
runs it:

    reasoningbank_gemini.py session-start   SessionStart: the project's memory block
    reasoningbank_gemini.py prompt          BeforeAgent: the memories new to this session that fit the prompt
    reasoningbank_gemini.py capture         AfterAgent, SessionEnd: the chat recording queued for distillation
    reasoningbank_gemini.py tool            AfterTool (read_file, replace, write_file, run_shell_command): the
                                            memories about that file or the command's error, new to this session

The hooks themselves are the dispatcher every agent's hooks share (docs/security/hooks.md#one-dispatcher;
Gemini CLI's adapter, which reads its recordings: reasoningbank_hooks/agents/gemini_cli.py). It lives in
the Claude Code plugin's folder because installing that plugin copies its folder alone. Python's standard
library only; a hook prints its answer on stdout (which Gemini CLI parses as JSON), at most one line on
stderr, and always exits 0.
"""

import os
import sys

# where the reasoningbank_hooks package is (os.path, not pathlib: a hook process pays for every import)
HOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "claude-code", "hooks")
sys.path.insert(0, HOOKS)

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("gemini-cli", sys.argv))
