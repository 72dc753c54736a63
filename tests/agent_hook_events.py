"""The hook events each agent client gives its hooks on stdin, in the client's documented shape, for the
tests of the hooks under integrations/. Plain data, no Django."""

from __future__ import annotations

from typing import Any


def claude_code_event(name: str, **extra: Any) -> dict[str, Any]:
    """Claude Code's hook input (hooks reference: session_id, transcript_path, cwd, permission_mode,
    hook_event_name; prompt, or stop_hook_active, or trigger and custom_instructions, or reason, per
    event)."""
    base = {
        "session_id": "9f3c2a1e-claude",
        "transcript_path": None,
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": name,
    }
    return {**base, **extra}


def codex_event(name: str, **extra: Any) -> dict[str, Any]:
    """Codex's hook input (codex-rs/hooks/schema: session_id, transcript_path, cwd, hook_event_name,
    model, permission_mode, turn_id; prompt, or stop_hook_active and last_assistant_message). SessionEnd's
    is smaller, as Codex CLI 0.171.0 gave it (captured from the real CLI): session_id, transcript_path,
    cwd, hook_event_name and ``reason`` ("other"), no model, permission mode or turn."""
    base = {
        "session_id": "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5",
        "transcript_path": None,
        "cwd": "/home/dev/shop",
        "hook_event_name": name,
    }
    if name == "SessionEnd":
        return {**base, "reason": "other", **extra}
    base |= {"model": "gpt-5-codex", "permission_mode": "default"}
    if name != "SessionStart":
        base["turn_id"] = "019a2d7a-c7fa-72d2-b6fd-78878bfe34e4"
    return {**base, **extra}


def gemini_event(name: str, **extra: Any) -> dict[str, Any]:
    """Gemini CLI's hook input (hooks reference: session_id, transcript_path, cwd, hook_event_name,
    timestamp; source, prompt, prompt_response and stop_hook_active, or reason, per event)."""
    base = {
        "session_id": "2b1f9c3e-gemini",
        "transcript_path": "/nowhere.json",
        "cwd": "/home/dev/shop",
        "hook_event_name": name,
        "timestamp": "2026-11-27T09:00:00.000Z",
    }
    return {**base, **extra}


def cursor_event(name: str, **extra: Any) -> dict[str, Any]:
    """Cursor's hook input (conversation_id, generation_id, model, hook_event_name, cursor_version,
    workspace_roots, user_email, transcript_path; session_id on sessionStart/sessionEnd, status and
    loop_count on stop, reason on sessionEnd)."""
    base = {
        "conversation_id": "c0ffee00-cursor",
        "generation_id": "gen-7",
        "model": "claude-4.5-sonnet",
        "hook_event_name": name,
        "cursor_version": "2.1.0",
        "workspace_roots": ["/home/dev/shop"],
        "user_email": "dev@example.com",
        "transcript_path": None,
    }
    return {**base, **extra}
