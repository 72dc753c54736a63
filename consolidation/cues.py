"""Conflict cues (docs/consolidation.md#conflict-cues), free of Django: signs that two similar memories
say different things — one negates what the other advises, they use opposite words, or they name
different numbers, versions or durations for the same thing. Embeddings place "Always retry webhooks"
and "Never retry webhooks" side by side (cosine ≥ 0.9 for most models), so similarity alone would merge
them; a pair with a cue goes to the contradiction judge instead, and without a judge it waits for a
moderator. Never merged.

The checks are deliberately cheap and lean towards flagging: a false cue costs one judge call (or a
moderator's click) and keeps two memories apart; a missed one can fold opposite advice into one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Final

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# words after which the next content words are negated ("never retry", "do not cache")
NEGATIONS: Final = frozenset(
    {
        "not", "never", "no", "avoid", "without", "stop", "nor", "forbid", "forbids", "prohibit", "disallow",
        "dont", "instead", "rather",
    }
)
# skipped when looking for what a negation applies to
FILLER: Final = frozenset(
    {
        "a", "an", "the", "to", "be", "been", "being", "is", "are", "do", "does", "did", "it", "its", "this",
        "that", "these", "those", "any", "ever", "use", "using", "used", "your", "our", "their", "you", "we",
        "should", "must", "can", "will", "would", "always", "just", "also", "yet", "even", "so", "too", "very",
        "in", "on", "of", "for", "with", "at", "by", "from", "into", "as", "and", "or", "set", "pin", "keep",
        "immediately", "directly", "automatically", "manually", "again", "really", "blindly", "silently",
        "than",
    }
)
# a negation applies to the next content word, its verb ("never retry …", "do not cache …"): the
# words after it are the verb's objects, which a rewording may mention plainly ("never store money
# as float" / "use decimal for money")
NEGATION_REACH: Final = 1

# words that say the opposite of each other in engineering advice (both directions are checked)
OPPOSITES: Final = (
    ("enable", "disable"),
    ("before", "after"),
    ("increase", "decrease"),
    ("add", "remove"),
    ("allow", "deny"),
    ("allow", "block"),
    ("allow", "forbid"),
    ("include", "exclude"),
    ("accept", "reject"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("synchronously", "asynchronously"),
    ("true", "false"),
    ("minimum", "maximum"),
    ("min", "max"),
    ("upgrade", "downgrade"),
    ("lock", "unlock"),
    ("public", "private"),
    ("mutable", "immutable"),
    ("eager", "lazy"),
    ("optimistic", "pessimistic"),
    ("float", "decimal"),
    ("tabs", "spaces"),
    ("always", "never"),
    ("more", "fewer"),
    ("more", "less"),
    ("higher", "lower"),
    ("longer", "shorter"),
    ("larger", "smaller"),
    ("inside", "outside"),
    ("required", "optional"),
    ("blocking", "nonblocking"),
    ("online", "offline"),
    ("pin", "unpin"),
    ("on", "off"),
    ("compressed", "uncompressed"),
    ("yarn", "npm"),
    ("put", "patch"),
    ("monorepo", "polyrepo"),
)

NUMBER_WORDS: Final = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "sixty": 60, "hundred": 100,
}
# unit → (quantity class, factor to the class's base unit)
UNITS: Final = {
    "ms": ("time", 0.001), "millisecond": ("time", 0.001), "milliseconds": ("time", 0.001),
    "s": ("time", 1), "sec": ("time", 1), "secs": ("time", 1), "second": ("time", 1), "seconds": ("time", 1),
    "m": ("time", 60), "min": ("time", 60), "mins": ("time", 60), "minute": ("time", 60), "minutes": ("time", 60),
    "h": ("time", 3600), "hr": ("time", 3600), "hrs": ("time", 3600), "hour": ("time", 3600),
    "hours": ("time", 3600), "d": ("time", 86400), "day": ("time", 86400), "days": ("time", 86400),
    "week": ("time", 604800), "weeks": ("time", 604800),
    "kb": ("size", 1e3), "mb": ("size", 1e6), "gb": ("size", 1e9), "tb": ("size", 1e12),
    "%": ("percent", 1), "percent": ("percent", 1),
    "x": ("factor", 1), "times": ("count", 1), "retries": ("count", 1), "attempts": ("count", 1),
    "workers": ("workers", 1), "threads": ("threads", 1), "connections": ("connections", 1),
}

# a bare number is compared only when it says how much of something configurable ("timeout 30",
# "port 8080") or which version of a tool ("node 18", "python 3.11"): other numbers in prose (issue
# or step numbers, "note 11") say nothing about whether two pieces of advice agree
QUANTITY_WORDS: Final = frozenset(
    {
        "timeout", "ttl", "retry", "port", "limit", "size", "max", "min", "maximum", "minimum", "pool", "workers",
        "threads", "replicas", "concurrency", "batch", "version", "level", "depth", "attempts", "interval", "delay",
        "backoff", "capacity", "quota", "rate", "threshold", "budget", "expiry", "lifetime", "precision", "scale",
    }
)
TOOLS: Final = frozenset(
    {
        "node", "nodejs", "python", "postgres", "postgresql", "mysql", "java", "jdk", "go", "golang", "ruby",
        "rails", "django", "react", "vue", "angular", "typescript", "php", "kotlin", "scala", "rust", "redis",
        "kafka", "elasticsearch", "kubernetes", "ubuntu", "debian", "alpine", "gradle", "maven", "npm", "pip",
        "webpack", "eslint", "jest", "pytest", "terraform", "helm", "docker", "tls", "http", "openssl",
    }
)

_WORD = re.compile(r"[a-z][a-z0-9+#]*|\d+(?:\.\d+)*|%|[,.;:!?()]")
PUNCTUATION: Final = frozenset(",.;:!?()")
_CONTRACTION = re.compile(r"\b(\w+)n['’]t\b")
_VERSIONED = re.compile(r"\bv(\d)")


@dataclass(frozen=True)
class Cue:
    kind: str  # "negation" | "opposites" | "numbers" | "order" | "substitution"
    detail: str  # what differs, for the moderator and the dry-run preview

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def _words(text: str) -> list[str]:
    lowered = _CONTRACTION.sub(r"\1 not", text.lower().replace("can't", "can not").replace("won't", "will not"))
    lowered = _VERSIONED.sub(r"\1", lowered)  # "v18" and "18" are the same version
    # a line break ends a clause as a full stop does (title, description and content are lines)
    return _WORD.findall(lowered.replace("don't", "do not").replace("\n", " . "))


def _stem(word: str) -> str:
    """Just enough stemming that "retries" / "retrying" / "retried" meet "retry", and "cached" /
    "caches" / "caching" meet "cache" (a final e is dropped from every stem)."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


# words that may stand before a clause's verb without being it ("always retry", "you should cache")
LEAD_FILLER: Final = frozenset(
    {"always", "you", "we", "should", "must", "to", "the", "a", "an", "and", "then", "first", "also", "just", "only"}
)
ORDER_MARKERS: Final = frozenset({"before", "after", "then"})


def _clauses(words: list[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for word in words:
        if word in PUNCTUATION:
            if clauses[-1]:
                clauses.append([])
        else:
            clauses[-1].append(word)
    return [c for c in clauses if c]


def _lead(clause: list[str]) -> str | None:
    """A clause's verb as an imperative states it: its first word past "always", "you should", …"""
    for word in clause:
        if word not in LEAD_FILLER and word not in FILLER:
            return None if word in NEGATIONS or word[0].isdigit() else _stem(word)
    return None


def _negated(words: list[str]) -> set[str]:
    """Stems a negation applies to: the next content word ("never retry", "do not cache", "instead of
    float"), within its clause."""
    negated: set[str] = set()
    for clause in _clauses(words):
        for i, word in enumerate(clause):
            if word in NEGATIONS:
                rest = [w for w in clause[i + 1 :] if w not in FILLER and not w[0].isdigit()]
                negated.update(_stem(w) for w in rest[:NEGATION_REACH])
    return negated


def _orders(words: list[str]) -> set[tuple[str, str]]:
    """(first, second) actions a text orders: "tag before building" → (tag, build), "deploy after
    tagging" → (tag, deploy), "write first, then publish" → (writ, publish)."""
    found: set[tuple[str, str]] = set()
    clauses = _clauses(words)
    for n, clause in enumerate(clauses):
        for i, word in enumerate(clause):
            if word not in ORDER_MARKERS:
                continue
            after = next((_stem(w) for w in clause[i + 1 :] if w not in FILLER and w not in LEAD_FILLER), None)
            if i == 0 and word == "then" and n > 0:
                befores = {_lead(clauses[n - 1])}
            else:
                # the clause's verb ("tag … before building") and the word just before the marker
                # ("deploy the API before the frontend")
                content = [_stem(w) for w in clause[:i] if w not in FILLER and w not in LEAD_FILLER]
                befores = {content[0], content[-1]} if content else set()
            for before in befores:
                if before and after and before != after:
                    found.add((after, before) if word == "after" else (before, after))
    return found


def _title_stems(words: list[str]) -> tuple[str, ...]:
    skip = PUNCTUATION | FILLER | LEAD_FILLER | NEGATIONS
    return tuple(_stem(w) for w in words if w not in skip)


_COUNTED: Final = frozenset(_stem(word) for word in QUANTITY_WORDS | TOOLS)


def _quantities(words: list[str]) -> dict[str, set[str]]:
    """Numbers by what they measure: a unit's class ("time" in seconds, "size" in bytes, ...), else
    the word before them ("node 18", "python 3.11", "port 8080")."""
    found: dict[str, set[str]] = {}
    for i, word in enumerate(words):
        if word[0].isdigit():
            value = word
        elif word in NUMBER_WORDS:
            value = str(NUMBER_WORDS[word])
        else:
            continue
        after = words[i + 1] if i + 1 < len(words) else ""
        if after in UNITS and value.count(".") <= 1:
            unit_class, factor = UNITS[after]
            found.setdefault(unit_class, set()).add(f"{float(value) * factor:g}")
            continue
        # what the number is of: the nearest word before it, past fillers ("pin node to 18")
        j = i - 1
        while j >= 0 and words[j] in FILLER:
            j -= 1
        before = words[j] if j >= 0 else ""
        if before and (_stem(before) in _COUNTED or "." in value):
            found.setdefault(before, set()).add(value)
    return found


@dataclass(frozen=True)
class CueProfile:
    """What the cues compare of one memory's text (its first line is the title), computed once per
    memory (a run compares each memory with all of its close neighbours)."""

    negated: frozenset[str]  # verbs a negation applies to
    leads: frozenset[str]  # verbs stated plainly, as the first word of a clause
    head_stems: frozenset[str]  # title and description: where the advice is stated
    orders: frozenset[tuple[str, str]]
    title: tuple[str, ...]  # its words in order, fillers left out
    quantities: dict[str, frozenset[str]]


def cue_profile(text: str) -> CueProfile:
    lines = text.split("\n")
    words, head, title = _words(text), _words("\n".join(lines[:2])), _words(lines[0])
    return CueProfile(
        negated=frozenset(_negated(words)),
        # the description line says when to apply a lesson ("Calling third-party APIs …"), not what
        # to do: its first words are no verbs to compare
        leads=frozenset(
            lead for clause in _clauses(_words("\n".join(lines[:1] + lines[2:]))) if (lead := _lead(clause))
        ),
        head_stems=frozenset(_stem(w) for w in head),
        orders=frozenset(_orders(head)),
        title=_title_stems(title),
        quantities={what: frozenset(values) for what, values in _quantities(words).items()},
    )


_OPPOSITE_STEMS: Final = tuple((x, y, _stem(x), _stem(y)) for x, y in OPPOSITES)
SUBSTITUTION_MAX = 2  # title words one side has and the other lacks, for a swap to count
SUBSTITUTION_SHARED_MIN = 2  # title words both share around the swap


def profile_cues(a: CueProfile, b: CueProfile) -> tuple[Cue, ...]:
    """Every cue that the two profiled texts disagree; empty when none is found. Symmetric."""
    cues: list[Cue] = []
    # a verb one memory negates and the other states plainly (and never negates itself)
    flipped = sorted(((a.negated - b.negated) & b.leads) | ((b.negated - a.negated) & a.leads))
    if flipped:
        cues.append(Cue("negation", f"one says not to, the other to: {', '.join(flipped[:5])}"))
    for x, y, sx, sy in _OPPOSITE_STEMS:
        if (sx in a.head_stems and sy in b.head_stems and sx not in b.head_stems and sy not in a.head_stems) or (
            sy in a.head_stems and sx in b.head_stems and sy not in b.head_stems and sx not in a.head_stems
        ):
            cues.append(Cue("opposites", f"{x} / {y}"))
    for what in sorted(a.quantities.keys() & b.quantities.keys()):
        # disjoint values for the same thing: "5 seconds" vs "60 seconds", "node 18" vs "node 20";
        # one adding a value the other lacks ("retry 3 times, at most 30 s") is detail, not conflict
        va, vb = a.quantities[what], b.quantities[what]
        if not va & vb:
            cues.append(Cue("numbers", f"{what}: {', '.join(sorted(va))} vs {', '.join(sorted(vb))}"))
    swapped = sorted(f"{x} → {y}" for x, y in a.orders if (y, x) in b.orders)
    if swapped:
        cues.append(Cue("order", f"the other order: {', '.join(swapped[:3])}"))
    # titles that read the same but for a word or two swapped in place: "Use PUT / PATCH for partial
    # updates", "Use Yarn / npm for the frontend packages" — the lesson recorded again with the
    # opposite choice. A rewording changes more, or moves words; numbers are the numbers check's.
    if (swap := _title_swap(a.title, b.title)) is not None:
        cues.append(Cue("substitution", swap))
    return tuple(cues)


def _title_swap(a: tuple[str, ...], b: tuple[str, ...]) -> str | None:
    ops = [op for op in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    swapped, shared = max(i2 - i1, j2 - j1), len(a) - (i2 - i1)
    # two shared words carry a one-word swap ("PUT / PATCH for partial updates"); a two-word swap
    # needs three, or any rewording of a short title would count
    if swapped > SUBSTITUTION_MAX or shared < SUBSTITUTION_SHARED_MIN + (swapped > 1):
        return None
    old, new = a[i1:i2], b[j1:j2]
    if all(len(w) == 1 for w in old + new):
        return None  # "rule B / rule C", "plan a / plan b": labels, not a choice of what to do
    if _amount(old) is not None and _amount(old) == _amount(new):
        return None  # "2 minutes" / "120 seconds": the same amount in other units
    return f"{' '.join(old)} / {' '.join(new)}"


_UNIT_STEMS: Final = {_stem(unit): scale for unit, scale in UNITS.items()} | dict(UNITS)


def _amount(words: tuple[str, ...]) -> tuple[str, float] | None:
    """A title span's quantity in its class's base unit ("2 minut" → ("time", 120)), if it is one."""
    if len(words) != 2 or not words[0][0].isdigit() or words[1] not in _UNIT_STEMS or words[0].count(".") > 1:
        return None
    unit_class, factor = _UNIT_STEMS[words[1]]
    return unit_class, float(words[0]) * factor


def conflict_cues(a: str, b: str) -> tuple[Cue, ...]:
    """Every cue that ``a`` and ``b`` disagree; empty when none is found. Symmetric."""
    return profile_cues(cue_profile(a), cue_profile(b))


# below this many words two texts being the same says too little ("Fixed." / "fixed")
SAME_WORDS_MIN: Final = 5


def same_words(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` say the same thing in the same words (case, spacing and punctuation aside).

    The one decision a cue may take for the judge (docs/consolidation.md#pairs-decided-without-the-judge):
    the same advice word for word can neither contradict nor supersede itself, so such a pair is
    compatible. Anything short of that — a word added, dropped or changed — may be the change that
    makes one supersede the other, which no cheap check can tell, so it goes to the judge."""
    words_a = [w for w in _words(a) if w not in PUNCTUATION]
    return len(words_a) >= SAME_WORDS_MIN and words_a == [w for w in _words(b) if w not in PUNCTUATION]
