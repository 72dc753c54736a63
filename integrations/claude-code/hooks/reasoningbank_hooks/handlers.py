"""The handlers, one per kind of event, the same for every agent (its adapter says where things are in its
event and how its transcript reads):

    session-start   the project's memory block (memory_context), its memories noted in the session's ledger
    prompt          the few memories new to this session that fit the prompt (memory_search with ``inject``),
                    framed as data by the service, within the token cap
    capture         the transcript queued for distillation (session_submit) and handed to the detached sender,
                    with what the session's commits changed (commits.py; the working tree's HEAD is noted
                    at session start)
    tool            recall at the moment of action (memory_recall): before a file tool, the memories about that
                    file (then its module); after a shell tool that failed, those about its error — new to this
                    session, framed as data by the service, within their own token cap

The start and prompt handlers tell the user once a session when memory is off (their own call refused or
out of reach, or the sender's last capture refused) and start the sender when earlier captures still wait.
``HANDLERS`` is the registry the dispatcher looks a hook file's action up in."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from . import budget, repository, service
from .agents.base import CAPTURE, PROMPT, SESSION_START, TOOL, Adapter, Outcome
from .errors import HookError
from .worktree import worktree_of

QUERY_MAX = 2000  # the service's query limit (characters)
ERROR_TAIL_CHARS = 8000  # of a failing command's output, the end is sent: the error is at the end
PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (?P<path>.+?)\s*$", re.MULTILINE)
# what a command's output shows when something failed, though its exit status was 0 (piped through tail,
# or a runner that reports and exits 0): only then is a successful command's output sent at all
ERROR_CUES = re.compile(
    r"Traceback \(most recent call last\)|^(?:E\s+|\s*)(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception)\b|^panic: "
    r"|error\[E\d+\]|panicked at|^\s*--- FAIL:|^FAILED |\bfailed\b.*\bpassed\b|Exception in thread",
    re.MULTILINE,
)

Handler = Callable[[Adapter, dict[str, Any]], Outcome]


def session_start(agent: Adapter, event: dict[str, Any]) -> Outcome:
    # commits.py (git, the diff reader: subprocess, ast, dataclasses) is imported by the two handlers that
    # use it, not by every hook: the tool hook runs before every file read and waits for each module it loads
    from . import commits

    try:  # where the session's commits will start from (docs/code-memory.md#staleness)
        commits.head_note(agent.session_key(event), commits.cwd_of(event))
    except OSError:
        pass  # no state directory: the session's commits go unreported, memory works all the same
    if event.get("source") in agent.skipped_start_sources:
        return Outcome()
    return asked(agent, event, context_block)


def prompt(agent: Adapter, event: dict[str, Any]) -> Outcome:
    return asked(agent, event, prompt_block)


def asked(agent: Adapter, event: dict[str, Any], ask: Callable[[Adapter, dict[str, Any]], str | None]) -> Outcome:
    """What ``ask`` got from the service, with the notice due to this session if memory is off."""
    try:
        block = ask(agent, event)
    except HookError as exc:
        return Outcome(notice=notice_for(agent, event, exc.notice), failure=exc)
    told = notice_for(agent, event, service.refusal_notice()) if agent.shows_notices else ""
    service.sender_kick()
    return Outcome(context=block, notice=told)


def notice_for(agent: Adapter, event: dict[str, Any], notice: str) -> str:
    """The notice if this client shows one and this session has not been told yet ("" otherwise: a client
    that cannot show it does not use up the session's one telling)."""
    return service.notice_due(agent.session_key(event), notice) if agent.shows_notices else ""


def context_block(agent: Adapter, event: dict[str, Any]) -> str | None:
    """The project's memory block; its memories go in the session's ledger."""
    body: dict[str, Any] = {}
    if agent.session_key(event):
        body["session_id"] = agent.session_key(event)
    if os.environ.get("REASONINGBANK_TASK"):
        body["task"] = os.environ["REASONINGBANK_TASK"]
    body.update(repository.place(event))  # the project tied to the working directory's repository
    block = service.call("/api/v1/memories/context", body, agent.user_agent).get("context_block") or ""
    return str(block) or None


def prompt_block(agent: Adapter, event: dict[str, Any]) -> str | None:
    """The block of memories that fit the prompt, new to this session, within the token cap; None when
    none qualifies. The service chooses and frames them (a search with ``inject``): only what the org's
    injection policy lets be injected, each memory as a note marked as data with its source, the whole
    block within the cap — the same block for every client (docs/security/memory-poisoning.md)."""
    text = event.get("prompt")
    if not isinstance(text, str) or not text.strip() or text.lstrip().startswith("/"):
        return None  # nothing to search for, or a slash command (the client's, not a task)
    caps = budget.prompt_caps()
    body: dict[str, Any] = {
        "query": text.strip()[:QUERY_MAX],
        "limit": caps.memories,
        "token_budget": caps.tokens,
        "min_similarity": caps.min_similarity,
        "include_summaries": False,
        "mode": "standard",
        "inject": True,
    }
    if agent.session_key(event):
        body.update(session_id=agent.session_key(event), exclude_seen=True)
    body.update(repository.place(event))
    return injection_block(agent, "/api/v1/memories/search", body, caps.tokens, "REASONINGBANK_PROMPT_TOKENS")


def capture(agent: Adapter, event: dict[str, Any]) -> Outcome:
    """Hand the transcript in, in the agent's own format (the service converts it): partial while the
    session goes on, final at its end. A session shorter than ``REASONINGBANK_CAPTURE_MIN_MESSAGES``
    messages is not sent. The submission is queued, not posted (service.hand_off)."""
    from . import commits

    if event.get("stop_hook_active"):
        return Outcome()  # the client is continuing because of a stop hook: the next stop will capture
    key = agent.session_key(event)
    if not key:
        raise HookError(f"the event has no {' or '.join(agent.session_fields)}")
    path = event.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise HookError(f"the event has no transcript_path{agent.no_transcript_hint}")
    trace, messages = agent.transcript(os.path.expanduser(path), budget.trace_limit())
    if messages < budget.capture_min_messages():
        return Outcome()
    body = {"session_id": key, "trace": trace, "trace_format": agent.trace_format, "partial": not agent.is_final(event)}
    try:  # queued first: the sender posts them before the submission, which may end the session
        commits.commits_queue(key, service.credential_checked(), agent.name)
    except OSError:
        pass  # as hand_off below will say, the queue cannot be written
    body.update(repository.place(event))
    service.hand_off(body, agent.name, agent.user_agent)
    return Outcome()


def tool(agent: Adapter, event: dict[str, Any]) -> Outcome:
    """Recall at the moment of action (docs/code-memory.md#recall-at-the-moment-of-action): before a file
    tool, the memories about the file it is about to read or change; after a shell tool whose output shows
    a failure, the memories about that error. Nothing to add (another tool, a file outside any working
    tree, a command that succeeded) is no request at all. The user is told nothing here: the session's
    start and prompt hooks say when memory is off."""
    name = event.get("tool_name")
    if name in agent.file_tools:
        body = file_body(agent, event, str(name))
    elif name in agent.shell_tools:
        body = failure_body(event)
    else:
        return Outcome()
    if body is None:
        return Outcome()
    try:
        return Outcome(context=recall_block(agent, event, body))
    except HookError as exc:
        return Outcome(failure=exc)


def file_body(agent: Adapter, event: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The recall request for the file a tool is about to read or change: its path, the working tree's top
    and remote; None when the event names no file, or one outside any working tree and the session's
    directory."""
    path = tool_path(event.get("tool_input"), agent.file_tools[name])
    if not path:
        return None
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else ""
    path = os.path.join(cwd or os.getcwd(), os.path.expanduser(path))
    tree = worktree_of(path)
    root = tree.root or cwd
    if not root or not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    body: dict[str, Any] = {"path": path, "root": root}
    remote = repository.remote_clean(tree.remote)
    if remote:
        body["repository"] = remote
    return body


def tool_path(tool_input: Any, keys: tuple[str, ...]) -> str:
    """The first file path among ``keys`` of the tool's input (the first file an apply_patch text names)."""
    if not isinstance(tool_input, dict):
        return ""
    for key in keys:
        value = tool_input.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        if key == "patch" or value.lstrip().startswith("*** Begin Patch"):
            match = PATCH_FILE.search(value)
            return match.group("path") if match else ""
        return value.strip()
    return ""


def failure_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """The recall request for a shell command's failure: the end of its output; None when it did not fail
    (no error reported by the client, and nothing in its output that looks like one) or was interrupted."""
    if event.get("is_interrupt"):
        return None  # the user stopped it: nothing failed
    reported = event.get("error")  # Claude Code's PostToolUseFailure: the failure as the client reports it
    output = reported if isinstance(reported, str) and reported.strip() else tool_output(event.get("tool_response"))
    if not output.strip() or (not reported and not ERROR_CUES.search(output)):
        return None
    body: dict[str, Any] = {"error": output[-ERROR_TAIL_CHARS:]}
    cwd = event.get("cwd")
    if isinstance(cwd, str) and cwd:
        remote = repository.remote_of(cwd)
        if remote:
            body["repository"] = remote
    return body


def tool_output(response: Any) -> str:
    """A tool's output as text, whatever the client's shape: a string, or an object whose ``stdout``,
    ``stderr``, ``output``, ``llmContent`` or ``error`` hold it."""
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        return ""
    parts = []
    for key in ("stdout", "stderr", "output", "llmContent", "error"):
        value = response.get(key)
        if isinstance(value, dict):
            value = value.get("message")
        if isinstance(value, str) and value.strip():
            parts.append(value)
    return "\n".join(parts)


def recall_block(agent: Adapter, event: dict[str, Any], body: dict[str, Any]) -> str | None:
    """The service's block for a recall request, new to this session, within the tool-time cap; None when
    nothing qualifies."""
    caps = budget.recall_caps()
    body.update(limit=caps.memories, token_budget=caps.tokens)
    if agent.session_key(event):
        body["session_id"] = agent.session_key(event)
    return injection_block(agent, "/api/v1/memories/recall", body, caps.tokens, "REASONINGBANK_RECALL_TOKENS")


def injection_block(agent: Adapter, path: str, body: dict[str, Any], cap: int, cap_name: str) -> str | None:
    """The block the service framed for ``body`` (None when nothing qualifies), refused when it is over the
    hook's own token cap, whatever the service measured."""
    block = service.call(path, body, agent.user_agent).get("injection_block")
    if not isinstance(block, str) or not block:
        return None
    if budget.tokens(block) > cap:
        raise HookError(f"the service's block is {budget.tokens(block)} tokens, over {cap_name}={cap}")
    return block


HANDLERS: dict[str, Handler] = {SESSION_START: session_start, PROMPT: prompt, CAPTURE: capture, TOOL: tool}
