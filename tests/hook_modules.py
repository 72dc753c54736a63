"""The hook scripts under integrations/ loaded in the test's own process, for the tests of what a hook
makes of a client's file without running it as its client does (that is tests/integrations/). Plain
Python, no Django."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
SHARED_HOOK = REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
GEMINI_HOOK = REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py"


def hook_module(name: str, path: Path) -> ModuleType:
    """A fresh copy of a hook script: its clock (the hook's deadline) starts now."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def gemini_recording_read(path: Path, limit: int = 500_000) -> tuple[str, int]:
    """What the Gemini CLI hook sends of the recording at ``path`` (``trace``) within ``limit`` bytes, and
    how many conversation messages it counted. The hook's deadline is the one its environment sets
    (``REASONINGBANK_TIMEOUT``); a test on a slow machine raises it."""
    assert "REASONINGBANK_TIMEOUT" in os.environ, "set REASONINGBANK_TIMEOUT: a test is not the hook's deadline"
    hook = hook_module("reasoningbank_hook", SHARED_HOOK)
    gemini = hook_module("reasoningbank_gemini", GEMINI_HOOK)
    trace, count = gemini.recording(hook, str(path), limit)
    return str(trace), int(count)
