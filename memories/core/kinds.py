"""How much each kind of memory matters to retention (its importance term,
docs/memory-model.md#tiers-and-retention), free of Django: recording stamps it on a new memory,
consolidation's retention scoring reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# An unknown kind weighs 0.5, the middle of the scale.
DEFAULT_IMPORTANCE: Final = 0.5

# Default importance per memory kind (docs/memory-model.md#kinds): facts and strategies are meant to
# last, events less, scratch least:
#   procedural (strategies, how-to)     0.85
#   semantic   (facts, lessons learned) 0.9
#   episodic   (timestamped events)     0.5
#   working    (session scratch)        0.3, below every other kind, because working memory has a
#                                       short TTL and should fade first.
KIND_IMPORTANCE: Final[Mapping[str, float]] = MappingProxyType(
    {
        "procedural": 0.85,
        "semantic": 0.9,
        "episodic": 0.5,
        "working": 0.3,
    }
)
