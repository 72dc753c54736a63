"""What other apps' dashboard pages show of memories' (one of memories' public modules,
docs/architecture.md#app-interfaces): the overview's bar chart (one look for every bar chart) with its
``Bucket`` rows, and the two sections of consolidation's review queue that memories owns: the memories
waiting for review before injection and, for an admin, what the instruction-smell detector held
(docs/security/memory-poisoning.md).
"""

from __future__ import annotations

from memories.dashboard.charts import bar_chart
from memories.dashboard.selectors import Bucket
from memories.trust.selectors_quarantine import quarantine_context
from memories.trust.views_injection import injection_review_context

__all__ = ["Bucket", "bar_chart", "injection_review_context", "quarantine_context"]
