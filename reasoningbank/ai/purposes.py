"""What an LLM call is for (``LlmCall.purpose``, the ``purpose`` label of the LLM metrics, the
``llm.<purpose>`` span): a registry the apps fill when they load, so a new purpose is one
``purpose_register`` line in the app that makes the call — no kernel edit and no migration.

The apps register theirs in their ``AppConfig.ready`` (memories: distilling a session, answering
``memory_ask``; consolidation: its phases' calls). ``llm_complete`` refuses a purpose nobody
registered before calling anything, which also keeps the metrics' ``purpose`` label bounded; the usage
page names each purpose by its label.
"""

from __future__ import annotations

from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

NAME_MAX = 20  # characters: the width of ``LlmCall.purpose``


@dataclass(frozen=True)
class Purpose:
    name: str  # stored on every LlmCall row and used as a metric label: short, stable
    label: str  # what the usage page calls it


class UnknownPurpose(ValueError):
    """An LLM call for a purpose no app registered: a programming error, refused before the call."""


_PURPOSES: dict[str, Purpose] = {}


def purpose_register(name: str, label: str) -> str:
    """Register ``name`` (idempotent for the same label) and return it."""
    if not name or len(name) > NAME_MAX or not name.replace("_", "").isalnum() or name != name.lower():
        raise ValueError(f"an LLM purpose is a lower-case word of at most {NAME_MAX} characters, not {name!r}")
    known = _PURPOSES.get(name)
    if known is not None and known.label != label:
        raise ValueError(f"the LLM purpose {name!r} is registered already, as {known.label!r}")
    _PURPOSES[name] = Purpose(name, label)
    return name


def purpose_unregister(name: str) -> None:
    """Forget ``name`` (a test's purpose); rows that carry it keep it and show it by name."""
    _PURPOSES.pop(name, None)


def purpose_require(name: str) -> str:
    if name not in _PURPOSES:
        raise UnknownPurpose(
            f"no app registered the LLM purpose {name!r} (reasoningbank.ai.purposes.purpose_register); "
            f"known: {', '.join(sorted(_PURPOSES))}"
        )
    return name


def purpose_label(name: str) -> str:
    """The purpose's label; a purpose stored by a version that had it and no longer does, as its name."""
    known = _PURPOSES.get(name)
    return known.label if known is not None else name


def purposes() -> tuple[Purpose, ...]:
    return tuple(sorted(_PURPOSES.values(), key=lambda p: p.name))


# the kernel's own: a call that belongs to no app's feature
OTHER = purpose_register("other", "Other")
