"""Anchors' values made comparable, pure (no Django): a git remote normalised so two clones of one
repository on two machines name it alike, a path made repository-relative, the path's parents for the
"then its module or directory" fallback of recall (docs/code-memory.md#anchors)."""

from __future__ import annotations

import posixpath
import re

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

REPOSITORY_MAX = 300
PATH_MAX = 1000
SYMBOL_MAX = 300

# scp-like remotes: git@github.com:acme/api.git (no scheme, a colon before the path)
_SCP = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!//)[^\s]+)$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/\s]+@)?(?P<host>[^/\s]+)(?P<path>/[^\s]*)?$", re.IGNORECASE)


def repository_normalise(remote: str) -> str:
    """``host/owner/name`` from any spelling of a git remote: https, ssh, scp-like, with or without a user,
    a port, ``.git`` or a trailing slash; the host lower-cased (hosts are case-insensitive, paths are not
    on every host, so they keep their case). Empty when ``remote`` is not a remote (a local path)."""
    text = remote.strip()
    match = _URL.match(text) or _SCP.match(text)
    if not match:
        return ""
    host = match.group("host").lower()
    host = host.rsplit(":", 1)[0] if re.search(r":\d+$", host) else host  # ssh://host:22/…
    path = (match.group("path") or "").strip("/")
    path = re.sub(r"\.git$", "", path).strip("/")
    if not path or ".." in path.split("/"):
        return ""
    return f"{host}/{path}"[:REPOSITORY_MAX]


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
