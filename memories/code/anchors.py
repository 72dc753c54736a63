"""Anchors' values made comparable, pure (no Django): a git remote normalised so two clones of one
repository on two machines name it alike (the kernel's ``reasoningbank.repositories``, which accounts uses
too), a path made repository-relative, the path's parents for the "then its module or directory" fallback
of recall (docs/code-memory.md#anchors)."""

from __future__ import annotations

import posixpath
import re

from reasoningbank.repositories import REPOSITORY_MAX, repository_normalise

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

__all__ = ["PATH_MAX", "REPOSITORY_MAX", "SYMBOL_MAX", "path_normalise", "path_parents", "repository_normalise"]

PATH_MAX = 1000
SYMBOL_MAX = 300


def path_normalise(path: str, root: str = "") -> str:
    """A repository-relative POSIX path: backslashes turned, ``root`` (the working tree's top, when the
    path is absolute) removed, ``./`` and duplicate slashes folded. Empty for a path outside ``root`` or
    one that climbs out of the tree."""
    text = path.strip().replace("\\", "/")
    if root:
        top = root.strip().replace("\\", "/").rstrip("/") + "/"
        if text.startswith(top):
            text = text[len(top) :]
        elif text.startswith("/"):
            return ""
    if text.startswith("/") or re.match(r"^[A-Za-z]:/", text):
        return ""
    text = posixpath.normpath(text) if text else ""
    if text in ("", ".") or text.startswith("../") or text == "..":
        return ""
    return text[:PATH_MAX]


def path_parents(path: str) -> list[str]:
    """The directories above ``path``, nearest first: ``a/b/c.py`` → ``["a/b", "a"]``. Recall falls back
    to memories anchored in the same module directory when none is anchored to the file itself."""
    parents = []
    head = posixpath.dirname(path)
    while head:
        parents.append(head)
        head = posixpath.dirname(head)
    return parents
