"""No Python module of the repository is longer than 600 lines: product code, tests, the bench and the
scripts (migrations aside: Django writes them; and so are the modules our generators write, marked "Do
not edit: regenerate" — their length follows the API's schema, and nobody reads them to find a thing).
A module that long holds several things a newcomer would look for under different names; it is split
along its seams instead (one package per rule family, per settings concern, per bench step).

Pure file reading, no Django, no database."""

from __future__ import annotations

from pathlib import Path

from tests.repo_files import REPO, python_modules

MAX_LINES = 600
GENERATED = b"Do not edit: regenerate"


def generated(path: Path) -> bool:
    with path.open("rb") as file:
        return GENERATED in file.read(600)


def line_count(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for _ in file)


def test_the_listing_sees_product_code_tests_bench_and_scripts_but_no_migration() -> None:
    found = {str(path.relative_to(REPO)) for path in python_modules()}
    assert {
        "reasoningbank/asgi.py",
        "tests/test_module_size.py",
        "bench/common.py",
        "scripts/git-code-report",
    } <= found
    assert not [name for name in found if "/migrations/" in name]


def test_no_module_is_longer_than_600_lines() -> None:
    too_long = {
        str(path.relative_to(REPO)): n
        for path in python_modules()
        if (n := line_count(path)) > MAX_LINES and not generated(path)
    }
    assert not too_long, f"split along their seams (at most {MAX_LINES} lines each): " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(too_long.items(), key=lambda item: -item[1])
    )
