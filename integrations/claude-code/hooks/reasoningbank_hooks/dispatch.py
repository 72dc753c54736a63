"""The one entry of every agent's hooks: ``main(agent, argv)``, which each client's entry script calls with
its agent's name and the action its hook file passes (``session-start``, ``prompt``, ``capture``).

It reads the client's event (bounded: reading.py), looks up the agent's adapter (agents.ADAPTERS) and the
handler the event runs (handlers.HANDLERS), prints the handler's answer in the client's shape, and fails
open: a hook never blocks or fails the session. Whatever goes wrong — an unknown agent, action or event,
the service out of reach, a broken event — it prints one line on stderr saying what failed, nothing else
on stdout than the answer, and exits 0."""

from __future__ import annotations

import json
import sys
from typing import Any

from .agents import ADAPTERS
from .agents.base import Adapter
from .budget import clock_start
from .errors import HookError
from .handlers import HANDLERS, Handler
from .reading import event_read


def main(agent_name: str, argv: list[str]) -> int:
    clock_start()
    action = argv[1] if len(argv) > 1 else ""
    agent = ADAPTERS.get(agent_name)
    label = agent.label if agent else f"reasoningbank-{agent_name}"
    try:
        event = event_read()  # first: the client's write to the hook's stdin is never left hanging
        if agent is None:
            raise HookError(f"unknown agent {agent_name!r}: {', '.join(sorted(ADAPTERS))}")
        outcome = handler_for(agent, action, event)(agent, event)
        answer_print(agent.answer(agent.event_name(event, action), outcome))
        if outcome.failure is not None:
            raise outcome.failure
    except HookError as exc:
        report(label, action, str(exc))
    except Exception as exc:  # a hook must never fail the session, whatever broke
        report(label, action, f"unexpected {type(exc).__name__}: {exc}")
    return 0


def handler_for(agent: Adapter, action: str, event: dict[str, Any]) -> Handler:
    """The handler ``action`` names, when the agent's hooks run it and the event the client says it sent
    is one the agent's adapter maps to it; else a HookError saying which part does not fit."""
    handler = HANDLERS.get(action)
    if handler is None or action not in agent.handlers:
        raise HookError(f"unknown action {action!r}: {agent.name}'s hooks run {', '.join(sorted(agent.handlers))}")
    name = event.get("hook_event_name")
    if isinstance(name, str) and name:
        mapped = agent.events.get(name)
        if mapped is None:
            raise HookError(f"no handler for {agent.name}'s {name!r} event: it handles {', '.join(agent.events)}")
        if mapped != action:
            raise HookError(f"{agent.name}'s {name} event runs {mapped!r}, not {action!r}: check the hook file")
    return handler


def answer_print(answer: dict[str, Any]) -> None:
    if answer:
        json.dump(answer, sys.stdout)
        sys.stdout.write("\n")


def report(label: str, action: str, what: str) -> None:
    """One line on stderr: the client shows it in its log (or its debug view) as the hook's error."""
    print(f"{label} {action}: {' '.join(what.split())}", file=sys.stderr)
