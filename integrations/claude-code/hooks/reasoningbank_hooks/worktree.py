"""Where a file is in its git working tree, read from the files git keeps (no ``git`` process: starting one
costs a tool hook more than its whole request): the tree's top, which a path is made relative to, and
its ``origin`` remote, which names the repository the service looks the file's memories up in
(docs/code-memory.md#recall-at-the-moment-of-action)."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

DEPTH_MAX = 64  # directories climbed looking for .git
CONFIG_MAX_BYTES = 256 * 1024
_SECTION = re.compile(r'^\s*\[\s*remote\s+"(?P<name>[^"]+)"\s*\]\s*$')
_ANY_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(?P<url>\S.*?)\s*$")


class WorkTree(NamedTuple):
    root: str  # the working tree's top ("" when the file is in none)
    remote: str  # its origin's URL, else its first remote's ("" when it has none)


def worktree_of(path: str) -> WorkTree:
    """The working tree holding ``path`` (a file or a directory), or ``WorkTree("", "")``."""
    here = os.path.abspath(path)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    for _ in range(DEPTH_MAX):
        marker = os.path.join(here, ".git")
        if os.path.isdir(marker):
            return WorkTree(here, remote_of(marker))
        if os.path.isfile(marker):  # a linked worktree or a submodule: "gitdir: <path>"
            return WorkTree(here, remote_of(linked_git_dir(marker)))
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return WorkTree("", "")


def linked_git_dir(marker: str) -> str:
    """The git directory a ``.git`` file points at, and for a linked worktree the repository's own (its
    ``commondir``), where the remotes are configured."""
    try:
        with open(marker, encoding="utf-8", errors="replace") as file:
            line = file.read(4096).strip()
    except OSError:
        return ""
    if not line.startswith("gitdir:"):
        return ""
    git_dir = line.removeprefix("gitdir:").strip()
    git_dir = git_dir if os.path.isabs(git_dir) else os.path.join(os.path.dirname(marker), git_dir)
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as file:
            common = file.read(4096).strip()
        return common if os.path.isabs(common) else os.path.normpath(os.path.join(git_dir, common))
    except OSError:
        return git_dir


def remote_of(git_dir: str) -> str:
    """The URL of the ``origin`` remote in ``git_dir/config``, else of the first remote, else ""."""
    if not git_dir:
        return ""
    try:
        with open(os.path.join(git_dir, "config"), encoding="utf-8", errors="replace") as file:
            text = file.read(CONFIG_MAX_BYTES)
    except OSError:
        return ""
    urls: dict[str, str] = {}
    section = None
    for line in text.splitlines():
        if match := _SECTION.match(line):
            section = match.group("name")
        elif _ANY_SECTION.match(line):
            section = None
        elif section and (match := _URL.match(line)):
            urls.setdefault(section, match.group("url"))
    return urls.get("origin") or next(iter(urls.values()), "")
