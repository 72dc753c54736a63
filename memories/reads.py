"""The bank's reads other apps make (one of memories' public modules, docs/architecture.md#app-interfaces):
a project resolved for a principal (404 for another organization's), the memories a principal may read
and the scopes it reaches, whether a memory may still be written, where a memory came from, and the names
of the screening rules its findings tripped (docs/security/memory-poisoning.md).

Every one goes through the access layer like memories' own reads; the selectors live in their feature
packages, this module only names the ones other apps may call.
"""

from __future__ import annotations

from memories.core.selectors import memories_readable, memory_is_writable, project_resolve, project_target, reach_for
from memories.trust.provenance_selectors import memory_source
from memories.trust.screening import rules_named

__all__ = [
    "memories_readable",
    "memory_is_writable",
    "memory_source",
    "project_resolve",
    "project_target",
    "reach_for",
    "rules_named",
]
