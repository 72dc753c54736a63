"""The kinds of prompt the service sends an LLM, each with one example (docs/llm.md#what-the-service-asks):
a registry the apps fill when they load, next to their purposes (``reasoningbank.ai.purposes``), so that
``manage.py llm_check`` and the system page's check send every prompt the service uses — a new prompt is
one ``prompt_kind_register`` line in the app that sends it, checked from the day it is added.

An example is built from the app's own prompt builders and fixed texts, with a small made-up input, and
carries the parser the service reads the reply with: the check asks whether the configured model answers
that prompt in a shape that parser reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

EXAMPLE_MAX_TOKENS = 2048  # what the service allows a reply of every kind (llm_complete's default)


@dataclass(frozen=True)
class PromptExample:
    system: str
    prompt: str
    # the service's parser for this kind's reply: raises ValueError (its ParseError) when it cannot read it
    parse: Callable[[str], object]
    max_tokens: int = EXAMPLE_MAX_TOKENS


@dataclass(frozen=True)
class PromptKind:
    name: str  # what llm_check calls it: short, stable
    purpose: str  # the purpose its calls are metered under (a registered one)
    example: Callable[[], PromptExample]


class UnknownPromptKind(ValueError):
    """A prompt kind no app registered."""


_KINDS: dict[str, PromptKind] = {}


def prompt_kind_register(name: str, *, purpose: str, example: Callable[[], PromptExample]) -> str:
    """Register ``name`` (again with the same purpose: replaced, as when an app's ``ready`` runs twice)."""
    known = _KINDS.get(name)
    if known is not None and known.purpose != purpose:
        raise ValueError(f"the prompt kind {name!r} is registered already, for the purpose {known.purpose!r}")
    _KINDS[name] = PromptKind(name, purpose, example)
    return name


def prompt_kind_unregister(name: str) -> None:
    """Forget ``name`` (a test's kind)."""
    _KINDS.pop(name, None)


def prompt_kinds() -> tuple[PromptKind, ...]:
    """Every registered kind, in the order the apps registered them (the order the check reports)."""
    return tuple(_KINDS.values())


def prompt_kind_get(name: str) -> PromptKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise UnknownPromptKind(f"no prompt kind {name!r}; known: {', '.join(_KINDS) or 'none'}") from None
