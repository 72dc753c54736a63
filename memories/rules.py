"""The bank's rules other apps' logic follows, Django-free (one of memories' public modules,
docs/architecture.md#app-interfaces): what a kind weighs, where confidence starts, which verdict of the
write gate means "near copy", how a memory came to be, how a consolidated summary's parts are mended,
and the names of the screening rules a finding tripped.

Pure, so pure modules of other apps (consolidation's retention, its summary prompts) may import it.
The rules live in their feature packages; this module only names the ones other apps rely on.
"""

from __future__ import annotations

from memories.context.summary_parts import summary_parts_repair
from memories.core.gate import NEAR_COPY
from memories.core.kinds import DEFAULT_IMPORTANCE, KIND_IMPORTANCE
from memories.signals.confidence import INITIAL_DEFAULT as INITIAL_CONFIDENCE
from memories.trust.provenance import HOW_PATTERN, HOW_PROMOTED, HOW_SYNTHESISED
from memories.trust.screening import rules_named

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

__all__ = [
    "DEFAULT_IMPORTANCE",
    "HOW_PATTERN",
    "HOW_PROMOTED",
    "HOW_SYNTHESISED",
    "INITIAL_CONFIDENCE",
    "KIND_IMPORTANCE",
    "NEAR_COPY",
    "rules_named",
    "summary_parts_repair",
]
