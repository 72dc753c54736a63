"""The paths a request names (memories/code/paths.py, pure): files exactly, directories with everything
under them, symbols with their members."""

from __future__ import annotations

import pytest

from memories.code.paths import (
    PathSelection,
    directory_clean,
    like_escape,
    path_selection,
    path_spec_clean,
    symbol_clean,
)


@pytest.mark.parametrize(
    ("given", "clean"),
    [
        ("src/app.py", "src/app.py"),
        ("./src//app.py", "src/app.py"),
        ("src\\api\\", "src/api/"),
        ("  src/api/  ", "src/api/"),
        ("src/api/../core/", "src/core/"),
    ],
)
def test_a_path_is_normalised_and_a_trailing_slash_keeps_it_a_directory(given, clean):
    assert path_spec_clean(given) == clean


@pytest.mark.parametrize("given", ["", "/", "/etc/passwd", "../outside.py", "C:/work/app.py", "a" * 1001])
def test_a_path_outside_the_repository_is_refused_with_the_way_to_write_it(given):
    with pytest.raises(ValueError, match=r"characters|repository-relative"):
        path_spec_clean(given)


def test_a_selection_matches_its_files_exactly_and_everything_under_its_directories():
    selection = path_selection(["src/app.py", "manual/"])
    assert selection.matches("src/app.py")
    assert not selection.matches("src/app.py.orig")
    assert not selection.matches("src/app")
    assert selection.matches("manual/index.md") and selection.matches("manual/api/v1.md")
    assert not selection.matches("manual-old/index.md")  # a directory ends at its slash
    assert not selection.matches("src/other.py")


def test_what_a_named_directory_holds_already_is_folded_into_it():
    selection = path_selection(["src/", "src/app.py", "src/api/", "lib/x.py", "lib/x.py"])
    assert selection == PathSelection(files=("lib/x.py",), directories=("src/",))


def test_an_empty_selection_is_false_and_matches_nothing():
    assert not PathSelection()
    assert not PathSelection().matches("src/app.py")
    assert path_selection(["a.py"])


def test_like_patterns_take_percent_and_underscore_literally():
    assert like_escape("a_b%c\\d") == "a\\_b\\%c\\\\d"
    assert path_selection(["my_pkg/"]).like_patterns() == ["my\\_pkg/%"]


@pytest.mark.parametrize("bad", ["", "   ", "Parser parse", "x" * 301])
def test_a_symbol_is_one_dotted_name(bad):
    with pytest.raises(ValueError, match="dotted"):
        symbol_clean(bad)
    assert symbol_clean(" Parser.parse ") == "Parser.parse"


def test_a_directory_to_expand_is_the_top_or_ends_with_a_slash():
    assert directory_clean("") == "" and directory_clean("/") == ""
    assert directory_clean("src") == "src/" and directory_clean("src/api/") == "src/api/"
    with pytest.raises(ValueError):
        directory_clean("../up")
