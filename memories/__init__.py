"""The memories app: what agents learn, found again when it helps.

One package per feature, each with the same roles inside (``services.py`` writes, ``selectors.py``
reads, ``contracts.py`` the agent operations shared by MCP and REST, ``api.py`` REST views,
``views.py`` dashboard pages; other modules are pure logic, free of Django):

* ``core/`` — a memory: record (behind the write gate), get, list, edit, lineage, re-embed;
* ``search/`` — hybrid search: the vector and lexical legs, their fusion, ranking, folding;
* ``confidence/`` — confidence: feedback, outcomes, usage, the daily rollup and decay;
* ``sessions/`` — agent sessions: submit, distillation into memories, the injection ledger;
* ``code_reports/`` — what became of a session's code (kept or reverted), as stability signals;
* ``context/`` — the block a session starts with, and the consolidated summaries it is made of;
* ``ask/`` — a question answered by the LLM over retrieved memories, its dates checked;
* ``transfer/`` — export and import of a memory bank (and of CLAUDE.md / mem0 files);
* ``moderation/`` — archive, restore, un-merge, contradictions, pruning of low-confidence memories;
* ``dashboard/`` — the overview and the pages' shared parts.

Shared by all of them: ``models.py``, ``validation.py`` (input limits and cleaning, secret
scrubbing), ``embedding.py``, ``locks.py``, ``events.py``; the app's entry points are ``urls.py``,
``urls_dashboard.py``, ``mcp_tools.py``, ``tasks.py``, ``admin.py`` and ``management/commands/``.

Other apps see only ``PUBLIC_MODULES`` below: besides the models and the signals, four facades
(``writes.py``, ``reads.py``, ``rules.py``, ``pages.py``) name what they may use of the feature packages,
which stay private to the app (docs/architecture.md#app-interfaces).
"""

#: The modules other apps may import (docs/architecture.md#app-interfaces); everything else is private to memories.
PUBLIC_MODULES: tuple[str, ...] = (
    "memories.models",  # the rows
    "memories.events",  # the signals other apps listen to (memories_added, memories_archived, …)
    "memories.writes",  # the services other apps call, and the locks and embedding a write needs
    "memories.reads",  # the selectors other apps call
    "memories.rules",  # the pure rules other apps' logic follows (Django-free)
    "memories.pages",  # what other apps' dashboard pages show of memories'
)
