"""What makes two memories' texts identical: one fingerprint of title, description and content, with
case and runs of whitespace ignored (docs/memory-model.md#how-a-memory-enters-the-bank). No Django: the
migration that fills the column for existing memories keeps its own copy of this function."""

from __future__ import annotations

import hashlib

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# between the three fields, so that moving words from one field to the next changes the fingerprint
_SEPARATOR = "\x1f"


def text_normalise(text: str) -> str:
    """Lower case (Unicode case folding) with every run of whitespace as one space, trimmed."""
    return " ".join(text.split()).casefold()


def memory_content_hash(title: str, description: str, content: str) -> str:
    """SHA-256 (hex) of the normalised title, description and content."""
    normalised = _SEPARATOR.join(text_normalise(part) for part in (title, description, content))
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()
