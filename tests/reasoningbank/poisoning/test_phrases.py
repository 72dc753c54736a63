"""How the phrase rules run (reasoningbank/poisoning/phrases.py): each pattern is bounded, reads the lowered
text in lower case, and finds exactly what it would over the whole text when it runs only near its keys.
Pure: no Django."""

from __future__ import annotations

import json
import re
from pathlib import Path
from re import _constants as constants  # the stdlib's own parse tree: widths of a pattern and its lookarounds
from re import _parser as parser

import pytest

from reasoningbank.poisoning import engine  # noqa: F401  (imports every rule module: they register their phrases)
from reasoningbank.poisoning.folding import text_fold
from reasoningbank.poisoning.phrases import LOOKAROUND, PHRASES, Phrase, Text, lower_same_length

from .test_rules import FLAGGED, PASSING

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "poisoning" / "memories.jsonl"


def _name(phrase: Phrase) -> str:
    return phrase.pattern.pattern[:60]


def _lookaround_widths(tree: parser.SubPattern) -> list[int]:
    widths = []
    for op, av in tree.data:
        if op in (constants.ASSERT, constants.ASSERT_NOT):
            widths.append(av[1].getwidth()[1])
            widths += _lookaround_widths(av[1])
        elif op is constants.BRANCH:
            for branch in av[1]:
                widths += _lookaround_widths(branch)
        elif op in (constants.SUBPATTERN,):
            widths += _lookaround_widths(av[3])
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            widths += _lookaround_widths(av[2])
        elif op is constants.ATOMIC_GROUP:
            widths += _lookaround_widths(av)
    return widths


def _cased_literals(tree: parser.SubPattern) -> list[str]:
    found = []
    for op, av in tree.data:
        if op is constants.LITERAL and chr(av).lower() != chr(av):
            found.append(chr(av))
        elif op is constants.IN:
            found += [chr(code) for kind, code in av if kind is constants.LITERAL and chr(code).lower() != chr(code)]
        elif op is constants.BRANCH:
            for branch in av[1]:
                found += _cased_literals(branch)
        elif op is constants.SUBPATTERN:
            found += _cased_literals(av[3])
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            found += _cased_literals(av[2])
        elif op in (constants.ASSERT, constants.ASSERT_NOT):
            found += _cased_literals(av[1])
    return found


def test_every_rule_module_registered_its_phrases() -> None:
    assert len(PHRASES) > 80
    assert all(phrase.words and all(word == word.lower() for word in phrase.words) for phrase in PHRASES)


@pytest.mark.parametrize("phrase", PHRASES, ids=_name)
def test_no_match_is_longer_than_the_reach_of_its_phrase(phrase: Phrase) -> None:
    tree = parser.parse(phrase.pattern.pattern, phrase.pattern.flags)
    assert tree.getwidth()[1] <= phrase.reach
    assert max(_lookaround_widths(tree), default=0) <= LOOKAROUND


@pytest.mark.parametrize("phrase", [p for p in PHRASES if not p.cased], ids=_name)
def test_a_phrase_that_reads_the_lowered_text_is_written_in_lower_case(phrase: Phrase) -> None:
    assert not phrase.pattern.flags & re.IGNORECASE
    assert _cased_literals(parser.parse(phrase.pattern.pattern, phrase.pattern.flags)) == []


def _texts() -> list[str]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    memories = ["\n\n".join([r["title"], r["description"], r["content"], " ".join(r["tags"])]) for r in rows]
    return [text_fold(text).text for text in [*memories, *(text for _, text in FLAGGED), *PASSING]]


def test_a_phrase_run_near_its_keys_finds_what_it_finds_over_the_whole_text() -> None:
    """The keys are necessary: on every labelled memory and every rule example, the matches found in the
    regions around the keys are the matches of the pattern over the whole text (and some are found)."""
    texts = _texts()
    found = 0
    for phrase in PHRASES:
        for text in texts:
            scan = Text(text)
            whole = [m.span() for m in phrase.pattern.finditer(text if phrase.cased else lower_same_length(text))]
            assert [m.span() for m in phrase.finditer(scan, "rule")] == whole, (_name(phrase), text[:80])
            found += len(whole)
    assert found > 300
