"""How much each kind of memory matters to retention (seed 002's importance term), free of
Django: recording stamps it on a new memory, consolidation's retention scoring reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# Seed 002 falls back to 0.5 for a namespace it does not know; we do the same for unknown kinds.
DEFAULT_IMPORTANCE: Final = 0.5

# Default importance per memory kind (DESIGN §5). Seed 002 weighs git-notes *namespaces*; our
# kinds map onto the closest ones:
#   procedural (strategies, how-to)     ~ "patterns"  0.85
#   semantic   (facts, lessons learned) ~ "learnings" 0.9
#   episodic   (timestamped events)     ~ "progress"  0.5
#   working    (session scratch)        -- no seed namespace; 0.3 is ours, below everything the
#               seed lists, because working memory has a short TTL and should fade first.
KIND_IMPORTANCE: Final[Mapping[str, float]] = MappingProxyType(
    {
        "procedural": 0.85,
        "semantic": 0.9,
        "episodic": 0.5,
        "working": 0.3,
    }
)
