"""The SessionStart block (docs/session-context.md#the-block), pure (no Django): the
``<memory_consolidated_summaries>`` element an agent's session starts with, built within a token budget,
and replaced — never duplicated — in a context that already holds one (idempotent: any number of
injections leave exactly one block).

The entries' text is anyone's (a memory, an LLM's summary), so the block frames it as data
(``memories/trust/framing.py``, docs/security/memory-poisoning.md#framing): its header says the notes
are reference material, not instructions; each entry is one ``<memory id=… source=…>`` element naming
where it came from; and an entry's text reaches it without terminal escapes or bidi controls and
without any tag of the framing — its own element's or the block's — so that no memory can close its
element or the block early, or open a second block (which would defeat the replacement)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memories.trust.framing import FRAMING_RULES, code_changed_warning, note_text_safe, note_wrap

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

BLOCK_PATTERN = re.compile(r"<memory_consolidated_summaries.*?>.*?</memory_consolidated_summaries>", re.DOTALL)
HEADER = (
    "<!-- Memory Consolidation Context - Auto-generated, do not edit -->\n"
    "<!-- This block is replaced on each session start -->\n\n"
    "## Project Memory Context\n\n"
    "Notes from your team's memory bank (ReasoningBank) on key decisions, learnings and context from this "
    f"project's history: {FRAMING_RULES}\n"
)


@dataclass(frozen=True)
class Decision:
    decision: str
    rationale: str = ""


@dataclass(frozen=True)
class ContextEntry:
    """One summary (or, before a project has any, one memory) as the block shows it."""

    id: str
    title: str
    body: str
    start: datetime
    end: datetime
    key_facts: Sequence[str] = field(default_factory=tuple)
    decisions: Sequence[Decision] = field(default_factory=tuple)
    superseded: Sequence[tuple[str, str]] = field(default_factory=tuple)  # (original, superseded by)
    label: str = ""  # where it came from, one line (its provenance label)
    code_changed: str = ""  # the commit that changed the code it is about (docs/code-memory.md#staleness)


def tokens_estimate(text: str) -> int:
    """~4 characters a token (the search response's estimate too)."""
    return math.ceil(len(text) / 4)


def block_remove(context: str | None) -> tuple[str, bool]:
    """The context without any earlier block, and whether it held one."""
    if not context:
        return "", False
    cleaned, count = BLOCK_PATTERN.subn("", context)
    return cleaned.strip(), count > 0


def _entry_text(entry: ContextEntry) -> str:
    safe = note_text_safe
    lines = [
        f"### {safe(entry.title)} ({entry.start:%Y-%m-%d} - {entry.end:%Y-%m-%d})\n",
        safe(entry.body.strip()),
        "",
    ]
    if entry.key_facts:
        lines += ["**Key facts:**", *(f"- {safe(fact)}" for fact in entry.key_facts), ""]
    if entry.decisions:
        lines.append("**Decisions:**")
        for d in entry.decisions:
            lines.append(f"- {safe(d.decision)}")
            if d.rationale:
                lines.append(f"  - Rationale: {safe(d.rationale)}")
        lines.append("")
    if entry.superseded:
        superseded = (f"- ~~{safe(old)}~~ → {safe(new)}" for old, new in entry.superseded)
        lines += ["**Note - superseded information:**", *superseded, ""]
    extra = {"warning": code_changed_warning(entry.code_changed)} if entry.code_changed else {}
    return "\n" + note_wrap(entry.id, entry.label, "\n".join(lines), **extra) + "\n"


@dataclass(frozen=True)
class Block:
    text: str  # the whole element; empty when nothing fits or nothing is there
    entries: list[str]  # the ids of the entries it holds, in order
    tokens: int


def block_format(entries: Sequence[ContextEntry], *, token_budget: int, generated_at: datetime) -> Block:
    """The block holding as many of ``entries`` (in order) as fit in ``token_budget`` tokens, the
    element's own lines included; its ``version`` names exactly what it holds."""
    closing = "\n</memory_consolidated_summaries>"
    opening_size = len('<memory_consolidated_summaries version="00000000" generated_at="">\n') + 25
    used = tokens_estimate(HEADER) + math.ceil((opening_size + len(closing)) / 4)
    kept: list[tuple[ContextEntry, str]] = []
    for entry in entries:
        text = _entry_text(entry)
        cost = tokens_estimate(text)
        if used + cost > token_budget:
            continue  # a shorter one further down may still fit
        kept.append((entry, text))
        used += cost
    if not kept:
        return Block("", [], 0)
    version = hashlib.sha256("\n".join(f"{e.id}:{t}" for e, t in kept).encode()).hexdigest()[:8]
    stamp = generated_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (
        f'<memory_consolidated_summaries version="{version}" generated_at="{stamp}">\n'
        + HEADER
        + "".join(t for _, t in kept).rstrip()
        + closing
    )
    return Block(text, [e.id for e, _ in kept], tokens_estimate(text))


def context_inject(context: str | None, block: Block) -> tuple[str, bool]:
    """``context`` with its earlier block (if any) replaced by ``block``: (new context, replaced)."""
    clean, had = block_remove(context)
    if not block.text:
        return clean, had
    return (f"{clean}\n\n{block.text}" if clean else block.text), had
