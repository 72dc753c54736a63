"""What an agent client's hooks differ in, and nothing else: an adapter per client says which of its events
runs which handler, where its event keeps the session's id, the shape of the answer it reads back, and how
its transcript is read and sent. The handlers (handlers.py) do the rest the same way for every client."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

# The handlers' names, as the clients' hook files pass them to the entry scripts
SESSION_START, PROMPT, CAPTURE, TOOL = "session-start", "prompt", "capture", "tool"


class Outcome(NamedTuple):
    """What a handler did: the ``context`` to add to the agent's context, the ``notice`` to show the user
    (memory is off), and the ``failure`` to report on stderr once the answer is printed."""

    context: str | None = None
    notice: str = ""
    failure: Exception | None = None


def hook_specific_output(event_name: str, text: str) -> dict[str, Any]:
    """Claude Code's answer that adds context, which Codex and Gemini CLI read too."""
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


class Adapter(NamedTuple):
    """One agent client's hooks (a NamedTuple, not a dataclass: ``dataclasses`` imports ``inspect``, which
    costs every hook process several milliseconds before it has done anything).

    ``events``: each event the client's hook file registers, and the handler it runs (the same name the
    hook file's command passes); ``final_events``: those after which the session is over (a capture then
    is not ``partial``). ``transcript(path, limit)`` is the trace sent and its count of conversation
    messages. ``answer_context(event name, text)`` is the JSON the client reads added context from."""

    name: str
    label: str  # what starts the hook's line on stderr
    user_agent: str
    events: Mapping[str, str]
    final_events: frozenset[str]
    trace_format: str
    transcript: Callable[[str, int], tuple[str, int]]
    answer_context: Callable[[str, str], dict[str, Any]] = hook_specific_output
    shows_notices: bool = True  # the client shows a hook's ``systemMessage`` to the user
    session_fields: tuple[str, ...] = ("session_id",)
    skipped_start_sources: frozenset[str] = frozenset()
    no_transcript_hint: str = ""  # said when an event comes without a transcript_path
    # tool-time recall (the ``tool`` handler): each file tool's name and the keys of its input that may hold
    # the file's path (a key ``patch`` means an apply_patch text, whose "*** … File:" lines name the files),
    # and the names of the shell tools whose failing output is looked up by its error
    file_tools: Mapping[str, tuple[str, ...]] = {}
    shell_tools: frozenset[str] = frozenset()

    @property
    def handlers(self) -> frozenset[str]:
        return frozenset(self.events.values())

    def event_name(self, event: dict[str, Any], action: str) -> str:
        """The client's name of this event: the one it sent, else the first it registers ``action`` on
        (an event given by hand without ``hook_event_name``)."""
        name = event.get("hook_event_name")
        if isinstance(name, str) and name:
            return name
        return next((known for known, handler in self.events.items() if handler == action), action)

    def session_key(self, event: dict[str, Any]) -> str:
        """The session's id: the first of ``session_fields`` the event has (Cursor's conversation id is its
        session's), at most 200 characters."""
        for name in self.session_fields:
            value = event.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()[:200]
        return ""

    def is_final(self, event: dict[str, Any]) -> bool:
        return event.get("hook_event_name") in self.final_events

    def answer(self, event_name: str, outcome: Outcome) -> dict[str, Any]:
        """The JSON the client reads back, {} for nothing to say."""
        answer = self.answer_context(event_name, outcome.context) if outcome.context else {}
        if outcome.notice and self.shows_notices:
            answer["systemMessage"] = outcome.notice
        return answer
