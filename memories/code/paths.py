"""Which anchored paths a request names, pure (no Django): a file exactly, or with a trailing slash a
directory and everything under it; a symbol and its members. Shared by the memories list's ``path`` and
``symbol`` filters, search's ``paths`` and the dashboard's Code page (docs/code-memory.md#browse-by-code)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memories.code.anchors import PATH_MAX, SYMBOL_MAX, path_normalise

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# search's `paths`: how many an agent may name at once (the files it has open, a few directories)
PATHS_MAX = 20

# A memory anchored to one of a search's `paths` ranks this much higher (its score × this, shown as
# `path_boost` in explain). An agent that names the files it works in wants their lessons first: at 1.5 an
# anchored memory two thirds as relevant to the query as an unanchored one ranks level with it at equal
# confidence, while one unrelated to the query (under the similarity floor) is never brought in. Measured
# on a real history (bench/code_memory.py, bench/README.md): recall@3 of the earlier change to the same
# symbol 0.26 → 0.40, and the query's best answer without paths still in the first three 93.5 % of the
# time; a boost of 2 gains 0.03 more and keeps that best answer 77.5 % of the time.
ANCHOR_PATH_BOOST = 1.5


@dataclass(frozen=True)
class PathSelection:
    """Repository-relative files matched exactly and directories (each ending with ``/``) matched with
    everything under them."""

    files: tuple[str, ...] = ()
    directories: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.files or self.directories)

    def matches(self, path: str) -> bool:
        return path in self.files or any(path.startswith(directory) for directory in self.directories)

    def like_patterns(self) -> list[str]:
        """The directories as SQL ``LIKE`` prefixes (``%`` and ``_`` in a name taken literally)."""
        return [like_escape(directory) + "%" for directory in self.directories]


def path_spec_clean(value: str) -> str:
    """One path as a request names it, normalised: ``src/app.py`` (a file) or ``src/`` (a directory, its
    trailing slash kept). Raises ``ValueError`` saying what is wrong with it."""
    text = value.strip()
    if len(text) > PATH_MAX:
        raise ValueError(f"a path is at most {PATH_MAX} characters")
    directory = text.replace("\\", "/").endswith("/")
    clean = path_normalise(text)
    if not clean:
        raise ValueError(
            f"{value!r} is not a repository-relative path: give it relative to the repository's top, "
            "like src/app.py, or src/ for a directory"
        )
    return clean + "/" if directory else clean


def path_selection(values: Sequence[str]) -> PathSelection:
    """The files and directories ``values`` name (``path_spec_clean`` each, duplicates dropped, a file
    or directory already under a named directory folded into it)."""
    specs = sorted({path_spec_clean(value) for value in values})
    directories = [spec for spec in specs if spec.endswith("/")]
    directories = [d for d in directories if not any(d != other and d.startswith(other) for other in directories)]
    files = [spec for spec in specs if not spec.endswith("/") and not any(spec.startswith(d) for d in directories)]
    return PathSelection(files=tuple(files), directories=tuple(directories))


def symbol_clean(value: str) -> str:
    """A dotted symbol (``Parser.parse``) as a filter names it. Raises ``ValueError`` when it cannot be one."""
    text = value.strip()
    if not text or len(text) > SYMBOL_MAX or any(ch.isspace() for ch in text):
        raise ValueError(
            f"a symbol is a function or class name, dotted (Parser.parse), at most {SYMBOL_MAX} characters"
        )
    return text


def like_escape(text: str) -> str:
    """``text`` for a SQL ``LIKE`` pattern (the default escape character, backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class TreeEntry:
    """One child of a directory on the Code page: a file or a directory below it, with the memories
    anchored there (distinct) and the anchors whose code changed or was deleted since."""

    name: str
    path: str  # the file's path, or the directory's with its trailing slash
    is_directory: bool
    memories: int
    stale: int


def directory_clean(value: str) -> str:
    """The directory a tree request expands: ``""`` for the top, else its normalised path with a
    trailing slash. Raises ``ValueError`` like ``path_spec_clean``."""
    if not value.strip() or value.strip() == "/":
        return ""
    clean = path_spec_clean(value)
    return clean if clean.endswith("/") else clean + "/"
