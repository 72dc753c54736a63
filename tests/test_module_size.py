"""No Python module of the repository is longer than 600 lines: product code, tests, the bench and the
scripts (migrations aside: Django writes them). A module that long holds several things a newcomer
would look for under different names; it is split along its seams instead (one package per rule
family, per settings concern, per bench step).

Pure file reading, no Django, no database."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 600
# folders that are not the project's code: virtualenvs, data, caches, build output
SKIPPED_DIRS = frozenset({"node_modules", "staticfiles", "artifacts", "__pycache__", "migrations"})


def _is_python(path: Path) -> bool:
    if path.suffix == ".py":
        return True
    if path.suffix or not path.is_file():
        return False
    with path.open("rb") as file:  # an executable script without the suffix: scripts/claude-session-start
        first = file.readline(200)
    return first.startswith(b"#!") and b"python" in first


def _candidates() -> list[Path]:
    """The files git knows of (tracked, or new and not ignored); a tree without git is walked instead."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return [
            path
            for path in REPO.rglob("*")
            if not any(part.startswith(".") or part.endswith(".egg-info") for part in path.relative_to(REPO).parts)
        ]
    return [REPO / name for name in listed.decode().split("\0") if name]


def python_modules() -> list[Path]:
    return sorted(
        path
        for path in _candidates()
        if path.is_file() and not SKIPPED_DIRS.intersection(path.relative_to(REPO).parts[:-1]) and _is_python(path)
    )


def line_count(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for _ in file)


def test_the_listing_sees_product_code_tests_bench_and_scripts_but_no_migration() -> None:
    found = {str(path.relative_to(REPO)) for path in python_modules()}
    assert {
        "reasoningbank/asgi.py",
        "tests/test_module_size.py",
        "bench/common.py",
        "scripts/claude-session-start",
    } <= found
    assert not [name for name in found if "/migrations/" in name]


def test_no_module_is_longer_than_600_lines() -> None:
    too_long = {str(path.relative_to(REPO)): n for path in python_modules() if (n := line_count(path)) > MAX_LINES}
    assert not too_long, f"split along their seams (at most {MAX_LINES} lines each): " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(too_long.items(), key=lambda item: -item[1])
    )
