"""The handlers, one per kind of event, the same for every agent (its adapter says where things are in its
event and how its transcript reads):

    session-start   the project's memory block (memory_context), its memories noted in the session's ledger
    prompt          the few memories new to this session that fit the prompt (memory_search with ``inject``),
                    framed as data by the service, within the token cap
    capture         the transcript queued for distillation (session_submit) and handed to the detached sender

The start and prompt handlers tell the user once a session when memory is off (their own call refused or
out of reach, or the sender's last capture refused) and start the sender when earlier captures still wait.
``HANDLERS`` is the registry the dispatcher looks a hook file's action up in."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from . import budget, repository, service
from .agents.base import CAPTURE, PROMPT, SESSION_START, Adapter, Outcome
from .errors import HookError

QUERY_MAX = 2000  # the service's query limit (characters)

Handler = Callable[[Adapter, dict[str, Any]], Outcome]


def session_start(agent: Adapter, event: dict[str, Any]) -> Outcome:
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
    block = service.call("/api/v1/memories/search", body, agent.user_agent).get("injection_block")
    if not isinstance(block, str) or not block:
        return None
    if budget.tokens(block) > caps.tokens:  # the cap holds, whatever the service measured
        raise HookError(
            f"the service's block is {budget.tokens(block)} tokens, over REASONINGBANK_PROMPT_TOKENS={caps.tokens}"
        )
    return block


def capture(agent: Adapter, event: dict[str, Any]) -> Outcome:
    """Hand the transcript in, in the agent's own format (the service converts it): partial while the
    session goes on, final at its end. A session shorter than ``REASONINGBANK_CAPTURE_MIN_MESSAGES``
    messages is not sent. The submission is queued, not posted (service.hand_off)."""
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
    body.update(repository.place(event))
    service.hand_off(body, agent.name, agent.user_agent)
    return Outcome()


HANDLERS: dict[str, Handler] = {SESSION_START: session_start, PROMPT: prompt, CAPTURE: capture}
