"""Git remotes made comparable, pure (no Django): every spelling of one repository's remote — https, ssh,
scp-like, with or without a user, a port, ``.git`` or a trailing slash — is one ``host/owner/name``, so two
clones of a repository on two machines name it alike. In the kernel because two apps need it: accounts
(a project tied to a repository, docs/code-memory.md#projects-by-repository) and memories (anchors)."""

from __future__ import annotations

import re

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

REPOSITORY_MAX = 300

# scp-like remotes: git@github.com:acme/api.git (no scheme, a colon before the path)
_SCP = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!//)[^\s]+)$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/\s]+@)?(?P<host>[^/\s]+)(?P<path>/[^\s]*)?$", re.IGNORECASE)
# the normalised form itself (``github.com/acme/api``): a host with a dot, then a path
_BARE = re.compile(r"^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?/[^\s]+$")


def repository_normalise(remote: str) -> str:
    """``host/owner/name`` from any spelling of a git remote: https, ssh, scp-like, with or without a user,
    a port, ``.git`` or a trailing slash; the host lower-cased (hosts are case-insensitive, paths are not
    on every host, so they keep their case). The normalised form is its own normal form, so a value read
    back from the API can be sent again. Empty when ``remote`` is not a remote (a local path)."""
    text = remote.strip()
    match = _URL.match(text) or _SCP.match(text)
    if not match and _BARE.match(text):
        match = _URL.match(f"https://{text}")
    if not match:
        return ""
    host = match.group("host").lower()
    host = host.rsplit(":", 1)[0] if re.search(r":\d+$", host) else host  # ssh://host:22/…
    path = (match.group("path") or "").strip("/")
    path = re.sub(r"\.git$", "", path).strip("/")
    if not path or ".." in path.split("/"):
        return ""
    return f"{host}/{path}"[:REPOSITORY_MAX]
