#!/usr/bin/env python3
"""The OpenAI Codex CLI's entry to the ReasoningBank hooks (docs/codex.md), as integrations/codex/hooks.json
runs it:

    reasoningbank_codex.py session-start   SessionStart: the project's memory block
    reasoningbank_codex.py prompt          UserPromptSubmit: the memories new to this session that fit the prompt
    reasoningbank_codex.py capture         Stop, SessionEnd: the session's rollout file queued for distillation
    reasoningbank_codex.py tool            PreToolUse (apply_patch), PostToolUse (Bash): the memories about the
                                           patched file or the command's error, new to this session

The hooks themselves are the dispatcher every agent's hooks share (docs/security/hooks.md#one-dispatcher;
Codex's adapter: reasoningbank_hooks/agents/codex.py). It lives in the Claude Code plugin's folder because
installing that plugin copies its folder alone. Python's standard library only; a hook prints its answer
on stdout, at most one line on stderr, and always exits 0.
"""

import os
import sys

# where the reasoningbank_hooks package is (os.path, not pathlib: a hook process pays for every import)
HOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "claude-code", "hooks")
sys.path.insert(0, HOOKS)

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("codex", sys.argv))
