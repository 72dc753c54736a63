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

import sys
from pathlib import Path

HOOKS = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"  # where the reasoningbank_hooks package is
sys.path.insert(0, str(HOOKS))

from reasoningbank_hooks.dispatch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("codex", sys.argv))
