"""The write gate, free of Django: what may enter the bank
(docs/memory-model.md#how-a-memory-enters-the-bank).

Every path that writes a memory — ``memory_record`` (MCP and REST), ``memory_update``, session
distillation, consolidation's synthesis and pattern extraction — asks ``gate_check`` about the
(already secret-scrubbed) draft first. A draft that carries no reusable value is refused with a
``Rejection`` naming the field and the reason:

- ``empty``: a field with no letters or digits at all (only punctuation, only ``[REDACTED:…]``);
- ``placeholder``: template or placeholder text — "TODO", "TBD", "N/A", a field that is one ``<…>`` /
  ``{{…}}`` slot, an echoed ``NO_EXTRACTIONS``, or a field made mostly of "lorem ipsum", "<insert …>",
  "<your …>" (quoted inside a field that says enough of its own, a placeholder is part of real
  knowledge: "put token = <your-token-here> in ~/.config/acme.toml, then run acme login");
- ``repeated_characters``: one character, or one short run of characters, over and over;
- ``too_short``: content shorter than ``min_content_chars`` once secrets are removed;
- ``restates_title``: content whose words are all the title's;
- ``restated_prompt``: text that is mostly the instructions of our own prompts (a model echoing
  the extraction template's "**Title**: <concise name, max 50 chars>", the synthesis format or
  the pattern prompt's example back at us).

Near copies are the service's half (it needs the embeddings): a record whose embedding is at least
``WRITE_GATE_NEAR_COPY_SIMILARITY`` alike to an active memory of the same place is answered with
that memory, unless ``substantive_differences`` finds the two texts disagree where a word or two
flips advice (numbers, negations, opposite words). That is the cheap part of consolidation's conflict
cues (``consolidation/cues.py``, which this app may not import): at ≥ 0.97 little else differs, and
a pair let through here still meets the full cue check before any merge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from memories.sessions.prompts import DISTILL_SYSTEM_PROMPT, EXTRACTION_TEMPLATE, NO_EXTRACTIONS, REPAIR_HINT_TEMPLATE

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# the reasons, as stored in audit rows and answered in messages
EMPTY, PLACEHOLDER, REPEATED = "empty", "placeholder", "repeated_characters"
TOO_SHORT, RESTATES_TITLE, RESTATED_PROMPT, NEAR_COPY = "too_short", "restates_title", "restated_prompt", "near_copy"

# what our own prompts instruct (the distillation prompts; consolidation passes its own as ``prompts``)
OWN_PROMPTS: Final = (EXTRACTION_TEMPLATE, DISTILL_SYSTEM_PROMPT, REPAIR_HINT_TEMPLATE)
# share of a text's word triples found in a prompt above which the text restates it
PROMPT_OVERLAP: Final = 0.6

# a whole field that is one of these (case, spaces and punctuation ignored) says nothing
PLACEHOLDER_WORDS: Final = frozenset(
    {
        "todo", "tbd", "tba", "tbc", "na", "n a", "none", "null", "nil", "undefined", "nan", "fixme", "xxx",
        "placeholder", "lorem ipsum", "asdf", "qwerty", "foo", "bar", "foo bar", "foobar", "dummy", "blah",
        "blah blah", "title", "description", "content", "text", "untitled", "no title", "no description",
        "no content", "wip", "to do", "to be done", "fill in", "fill me in", "coming soon", "same as above",
        "ditto", "no extractions", "insert here", "your text here", "enter text",
    }
)  # fmt: skip
# placeholders inside a field: an instruction to fill something in ("<insert the steps here>", "[your
# description]", "<your-token-here>"), or filler text ("lorem ipsum dolor sit amet…", its usual words
# taken with it). Quoted in a field that says enough of its own ("put token = <your-token-here> in
# ~/.config/acme.toml, then run acme login") it is part of real knowledge; a field made mostly of them is
# a template (``is_placeholder``).
_LOREM_WORDS = (
    "dolor|sit|amet|consectetur|adipiscing|elit|sed|do|eiusmod|tempor|incididunt|ut|labore|et|dolore|magna|"
    "aliqua|enim|ad|minim|veniam|quis|nostrud|exercitation|ullamco|laboris|nisi|aliquip|ex|ea|commodo|consequat"
)
_PLACEHOLDER_SPAN = re.compile(
    r"lorem\s+ipsum(?:[\s,.;:]+(?:" + _LOREM_WORDS + r")\b)*"
    r"|<\s*(?:insert|your|enter|add|put|fill)\b[^<>]*>|\[\s*(?:insert|your|enter|fill)\b[^\[\]]*\]",
    re.IGNORECASE,
)
# our distillation's "nothing to extract" answer echoed into a field: never knowledge, wherever it stands
_ECHOED_ANSWER = re.compile(r"\b" + re.escape(NO_EXTRACTIONS) + r"\b")
# a field needs this many words of its own, and twice as many as its placeholders hold, to be more than
# a template
OWN_WORDS_MIN: Final = 3
# a whole field that is one template slot: "<concise title>", "{{trace}}", "[description here]"
_SLOT = re.compile(r"^\s*(?:<[^<>]{1,120}>|\{\{[^{}]{1,120}\}\}|\{[a-z_ ]{1,60}\}|\[[^\[\]]{1,120}\])\s*$", re.I)
_REDACTION = re.compile(r"\[REDACTED:[^\]]*\]")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ALNUM = re.compile(r"[^\W_]")

# words that flip a piece of advice when one text has them and the other does not
NEGATIONS: Final = frozenset(
    {"not", "never", "no", "don't", "dont", "doesn't", "shouldn't", "mustn't", "can't", "cannot", "won't",
     "avoid", "without", "stop", "nor", "disallow", "forbid", "forbidden", "prohibit"}
)  # fmt: skip
OPPOSITE_PAIRS: Final = (
    ("always", "never"), ("enable", "disable"), ("enabled", "disabled"), ("before", "after"),
    ("increase", "decrease"), ("add", "remove"), ("allow", "deny"), ("allow", "block"), ("include", "exclude"),
    ("accept", "reject"), ("sync", "async"), ("synchronous", "asynchronous"), ("true", "false"),
    ("min", "max"), ("minimum", "maximum"), ("more", "less"), ("more", "fewer"), ("higher", "lower"),
    ("longer", "shorter"), ("larger", "smaller"), ("upgrade", "downgrade"), ("public", "private"),
    ("required", "optional"), ("float", "decimal"), ("tabs", "spaces"), ("lock", "unlock"),
)  # fmt: skip
_POLAR: Final = frozenset(word for pair in OPPOSITE_PAIRS for word in pair)


@dataclass(frozen=True)
class Rejection:
    """Why a draft may not enter the bank: the field at fault, a reason code, one sentence."""

    field: str
    reason: str
    message: str


def normalise(text: str) -> str:
    """Lower-case words only (punctuation and runs of spaces dropped)."""
    return " ".join(_WORD.findall(text.casefold()))


def without_secrets(text: str) -> str:
    """The text with ``[REDACTED:…]`` markers taken out: a redacted secret is no content."""
    return " ".join(_REDACTION.sub(" ", text).split())


def is_placeholder(text: str) -> bool:
    """A field that is template or placeholder text: a placeholder word or one template slot on its own,
    an echoed ``NO_EXTRACTIONS``, or placeholders with too few words of the field's own around them
    (fewer than ``OWN_WORDS_MIN``, or than twice the placeholders' words). A placeholder quoted in a
    field that says enough of its own is not one."""
    words = normalise(text)
    if words in PLACEHOLDER_WORDS or _SLOT.match(text) or _ECHOED_ANSWER.search(text):
        return True
    quoted = _PLACEHOLDER_SPAN.findall(text)
    if not quoted:
        return False
    placeholder_words = sum(len(normalise(span).split()) for span in quoted)
    own_words = len(normalise(_PLACEHOLDER_SPAN.sub(" ", text)).split())
    return own_words < max(OWN_WORDS_MIN, 2 * placeholder_words)


def is_repetition(text: str) -> bool:
    """One character, or one run of at most 12 characters, repeated: "aaaaaa", "ok ok ok ok", "-=-=-=-="
    ("C++" and "Go" are not)."""
    compact = "".join(text.casefold().split())
    if len(compact) < 3:
        return False
    if len(set(compact)) == 1 or (len(compact) >= 4 and len(set(_ALNUM.findall(compact))) <= 1):
        return True
    return re.fullmatch(r"(.{1,12}?)\1{2,}", compact, flags=re.DOTALL) is not None


def _triples(words: Sequence[str]) -> set[tuple[str, ...]]:
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


@lru_cache(maxsize=16)
def _prompt_triples(prompts: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for prompt in prompts:
        # the placeholders of a template are instructions too ("{{outcome}}" → "outcome")
        found |= _triples(normalise(prompt).split())
    return frozenset(found)


@lru_cache(maxsize=16)
def _prompt_texts(prompts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f" {normalise(prompt)} " for prompt in prompts)


def prompt_overlap(text: str, prompts: Iterable[str]) -> float:
    """The share of the text's word triples that also occur in one of ``prompts`` (0 to 1)."""
    mine = _triples(normalise(text).split())
    if not mine:
        return 0.0
    theirs = _prompt_triples(tuple(prompts))
    return len(mine & theirs) / len(mine)


def restates_prompt(text: str, prompts: Sequence[str]) -> float | None:
    """How much of ``text`` is one of our prompts' own wording, when it is mostly that: the share of
    its word triples found in them (texts of 4+ triples), or 1.0 for a shorter text that is a phrase
    of a prompt word for word (a pattern prompt's example echoed back). None otherwise."""
    words = normalise(text).split()
    if len(words) >= 6:
        overlap = prompt_overlap(text, prompts)
        return overlap if overlap >= PROMPT_OVERLAP else None
    if len(words) >= 3 and any(f" {' '.join(words)} " in prompt for prompt in _prompt_texts(tuple(prompts))):
        return 1.0
    return None


def gate_check(
    *,
    title: str,
    description: str,
    content: str,
    min_content_chars: int,
    prompts: Sequence[str] = (),
    title_is_content: bool = False,
) -> Rejection | None:
    """The first rule a draft breaks (fields in order title, description, content), or None.

    ``prompts`` are more instruction texts the draft must not restate (a consolidation phase's own);
    ``title_is_content`` allows content equal to its title (a one-sentence pattern is its own title).
    """
    fields = (("title", title), ("description", description), ("content", content))
    for name, value in fields:
        visible = without_secrets(value)
        if not _ALNUM.search(visible):
            return Rejection(name, EMPTY, f"{name} is empty: it has no words once secrets are removed")
        if is_placeholder(visible):
            return Rejection(
                name, PLACEHOLDER, f"{name} is placeholder or template text ({_quote(visible)}): write the real thing"
            )
        if is_repetition(visible):
            return Rejection(name, REPEATED, f"{name} is one character or word repeated ({_quote(visible)})")
    body = without_secrets(content)
    if len(body) < min_content_chars:
        return Rejection(
            "content",
            TOO_SHORT,
            f"content is too short to be reusable ({len(body)} characters; at least {min_content_chars}): "
            "say what to do, and how",
        )
    if not title_is_content:
        content_words = set(normalise(body).split())
        if content_words <= set(normalise(without_secrets(title)).split()):
            return Rejection(
                "content", RESTATES_TITLE, "content only restates the title: add the steps or the reason behind it"
            )
    instructions = (*OWN_PROMPTS, *prompts)
    overlap = restates_prompt(body, instructions) or restates_prompt(f"{title}\n{description}\n{body}", instructions)
    if overlap is not None:
        return Rejection(
            "content",
            RESTATED_PROMPT,
            f"the memory restates the instructions of our own prompt ({overlap:.0%} of it) instead of a lesson",
        )
    return None


def _quote(text: str, limit: int = 40) -> str:
    one_line = " ".join(text.split())
    return repr(one_line if len(one_line) <= limit else one_line[: limit - 1] + "…")


# --- near copies --------------------------------------------------------------------------------------


def _numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(text))


def substantive_differences(a: str, b: str) -> tuple[str, ...]:
    """Where two very similar texts may still disagree: different numbers ("5 s" / "60 s", "Node 18" /
    "Node 20"), a negation one has and the other lacks, or opposite words ("enable" / "disable").
    Empty when none: then a near copy is only a rewording. Symmetric."""
    found: list[str] = []
    numbers_a, numbers_b = _numbers(a), _numbers(b)
    if numbers_a != numbers_b:
        found.append(f"numbers: {', '.join(sorted(numbers_a)) or '-'} vs {', '.join(sorted(numbers_b)) or '-'}")
    words_a = set(_WORD.findall(a.casefold().replace("’", "'")))
    words_b = set(_WORD.findall(b.casefold().replace("’", "'")))
    negations = sorted((words_a ^ words_b) & NEGATIONS)
    if negations:
        found.append(f"negation: {', '.join(negations)}")
    polar = sorted((words_a ^ words_b) & _POLAR)
    if polar:
        found.append(f"opposite words: {', '.join(polar)}")
    return tuple(found)


def near_copy_message(existing_id: str, similarity: float) -> str:
    return (
        f"A near copy of memory {existing_id} already exists (similarity {similarity:.3f}, same place, outcome and "
        "kind, no differing numbers or negations); nothing was recorded"
    )
