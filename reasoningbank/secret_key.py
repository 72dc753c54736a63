"""The local SECRET_KEY: generated once beside the embedded database, read by every process.

Local mode (no ``DATABASE_URL``) runs several processes from one checkout — uvicorn, the worker and
every ``manage.py`` command a user types in another shell — and they must all sign sessions, CSRF
tokens and password-reset links with the same key, without the user having to invent one. In
production (``DATABASE_URL``) the key is configuration and stays required.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_MIN_LENGTH = 32


def secret_key_load_or_create(path: Path) -> str:
    """The key in ``path``; a new random one (mode 0600) when the file does not exist yet.

    Processes that start at the same moment agree on one key: the new key is written to a private
    temporary file and hard-linked into place, which fails when another process got there first (its
    complete file is then read), so nobody ever reads a half-written key.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".secret_key.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(50) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass  # another process created it first: use theirs
        finally:
            os.unlink(temporary)
    key = path.read_text().strip()
    if len(key) < _MIN_LENGTH:
        raise ImproperlyConfigured(
            f"{path} holds no usable SECRET_KEY (fewer than {_MIN_LENGTH} characters): delete it to get a new "
            "one (signed-in users are then signed out), or set SECRET_KEY"
        )
    return key
