"""The repository's own files, as the meta-tests read them (no Django): what git knows of (tracked, or new
and not ignored), or, in a tree without git, every file outside hidden and build folders."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# folders that are not the project's code: virtualenvs, data, caches, build output; and Django's migrations
SKIPPED_DIRS = frozenset({"node_modules", "staticfiles", "artifacts", "__pycache__", "migrations"})


def repo_files(skipped_dirs: frozenset[str] = SKIPPED_DIRS) -> list[Path]:
    """The files, without those under a folder named in ``skipped_dirs`` (at any depth)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        paths = [
            path
            for path in REPO.rglob("*")
            if not any(part.startswith(".") or part.endswith(".egg-info") for part in path.relative_to(REPO).parts)
        ]
    else:
        paths = [REPO / name for name in listed.decode().split("\0") if name]
    return sorted(
        path for path in paths if path.is_file() and not skipped_dirs.intersection(path.relative_to(REPO).parts[:-1])
    )


def is_python(path: Path) -> bool:
    if path.suffix == ".py":
        return True
    if path.suffix:
        return False
    with path.open("rb") as file:  # an executable script without the suffix: scripts/git-code-report
        first = file.readline(200)
    return first.startswith(b"#!") and b"python" in first


def python_modules() -> list[Path]:
    """Product code, tests, the bench and the scripts; migrations aside (Django writes them)."""
    return [path for path in repo_files() if is_python(path)]


def first_party_apps() -> set[str]:
    """The top-level packages of ``INSTALLED_APPS`` that live in this repository (the apps and the project
    package), read from the settings so that no test keeps a list of its own that a new app would miss."""
    from django.conf import settings

    tops = {name.split(".")[0] for name in settings.INSTALLED_APPS}
    return {top for top in tops if (REPO / top / "__init__.py").is_file()}
