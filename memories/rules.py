"""The bank's rules other apps' logic follows, Django-free (one of memories' public modules,
docs/architecture.md#app-interfaces): what a kind weighs, where confidence starts, how a consolidated
summary's parts are mended.

Pure, so pure modules of other apps (consolidation's retention, its summary prompts) may import it; and
light, so their unit tests load no more than they need (the write gate's verdicts and the provenance
labels, which load the scrubbing and text-safety rules, are in ``memories.writes``).
The rules live in their feature packages; this module only names the ones other apps rely on.
"""

from __future__ import annotations

from memories.confidence.bayes import INITIAL_DEFAULT as INITIAL_CONFIDENCE
from memories.context.summary_parts import summary_parts_repair
from memories.core.kinds import DEFAULT_IMPORTANCE, KIND_IMPORTANCE

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

__all__ = [
    "DEFAULT_IMPORTANCE",
    "INITIAL_CONFIDENCE",
    "KIND_IMPORTANCE",
    "summary_parts_repair",
]
