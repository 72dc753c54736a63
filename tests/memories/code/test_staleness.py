"""What a commit's change of a file does to one anchor (memories/code/staleness.py, pure): deleted,
followed through a rename, code_changed by its symbol (or anything inside it) or, without a symbol, by a
hunk over its lines; a whole-file anchor only by a deletion."""

from __future__ import annotations

import pytest

from memories.code.staleness import FileChange, Hunk, Place, anchor_verdict, lines_touched, symbol_touched


def modified(*hunks: tuple[int, int], symbols: list[str] | None = None, path: str = "app/p.py") -> FileChange:
    return FileChange("modified", path, hunks=tuple(Hunk(s, n) for s, n in hunks), symbols=symbols)


@pytest.mark.parametrize(
    ("symbol", "changed", "touched"),
    [
        ("Parser.parse", ["Parser.parse"], True),
        ("Parser", ["Parser.parse"], True),  # a class changes with its methods
        ("Parser.parse", ["Parser.parse.inner"], True),
        ("Parser.parse", ["Parser"], False),  # the class line changed, not the method's body
        ("Parser", ["ParserError"], False),
        ("Parser.parse", ["Parser.render", "tokenize"], False),
    ],
)
def test_a_symbol_is_touched_by_itself_or_anything_in_its_body(symbol, changed, touched):
    assert symbol_touched(symbol, changed) is touched


@pytest.mark.parametrize(
    ("hunk", "touched"),
    [
        ((10, 1), True),  # its first line replaced
        ((20, 3), True),  # its last line removed with two after it
        ((5, 5), False),  # the five lines just before it
        ((21, 2), False),  # just after it
        ((15, 0), True),  # lines inserted between two of its lines
        ((20, 0), False),  # lines inserted after its last line
        ((9, 0), False),  # ... before its first
    ],
)
def test_a_hunk_touches_lines_it_replaces_or_inserts_between(hunk, touched):
    assert lines_touched(10, 20, [Hunk(*hunk)]) is touched


def test_the_symbol_decides_when_both_symbol_and_lines_are_anchored_and_the_reporter_read_symbols():
    place = Place("app/p.py", "Parser.parse", 10, 20)
    assert anchor_verdict(place, modified((12, 1), symbols=["Parser.render"])).state == "unchanged"
    assert anchor_verdict(place, modified((40, 1), symbols=["Parser.parse"])).state == "code_changed"
    # symbols not read (an unknown language): the lines decide
    assert anchor_verdict(place, modified((12, 1), symbols=None)).state == "code_changed"
    assert anchor_verdict(Place("app/p.py", "Parser.parse"), modified((12, 1), symbols=None)).state == "unchanged"


def test_a_whole_file_anchor_is_only_made_stale_by_a_deletion():
    whole = Place("app/p.py")
    assert anchor_verdict(whole, modified((1, 100), symbols=["f"])).state == "unchanged"
    assert anchor_verdict(whole, FileChange("deleted", "app/p.py")).state == "deleted"


def test_a_rename_moves_the_anchor_and_its_state_follows_the_modification():
    renamed = FileChange("renamed", "app/q.py", old_path="app/p.py", hunks=(Hunk(3, 1),), symbols=["g"])
    assert renamed.before == "app/p.py"
    verdict = anchor_verdict(Place("app/p.py", "f"), renamed)
    assert (verdict.state, verdict.path) == ("unchanged", "app/q.py")
    assert anchor_verdict(Place("app/p.py", "g"), renamed).state == "code_changed"


def test_an_added_file_flags_only_an_anchor_whose_file_had_been_deleted():
    added = FileChange("added", "app/p.py")
    assert anchor_verdict(Place("app/p.py", "f"), added).state == "unchanged"
    assert anchor_verdict(Place("app/p.py", "f"), added, deleted=True).state == "code_changed"
