"""What the code a memory is about does to its rank (docs/code-memory.md): memories anchored on the
paths a search names rank higher (``ANCHOR_PATH_BOOST``), memories whose anchored code changed since
they were written rank lower (``SEARCH_CODE_CHANGED_FACTOR``). One read of the anchors each, then one
sort."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from django.conf import settings

from memories.code.filters import memory_ids_anchored
from memories.code.paths import ANCHOR_PATH_BOOST, PathSelection
from memories.code.selectors_staleness import code_changed_of
from memories.search.ranking import code_changed_apply
from memories.search.statistics import sql_rows
from reasoningbank.tracing import span

if TYPE_CHECKING:
    from memories.search.selectors import SearchHit


def hits_code_ranked(hits: list[SearchHit], paths: PathSelection, organization_id: int) -> list[SearchHit]:
    """The hits boosted for the search's ``paths`` (whichever leg fetched them) and demoted for changed
    code, ranked again; the same list when neither applies. Each hit whose code changed carries it
    (``code_changed``): the answer's flag needs no second read."""
    if not hits:
        return hits
    ids = [hit.memory.id for hit in hits]
    anchored: set[str] = set()
    if paths:
        with span("memory.search.paths", candidates=len(hits)) as paths_span:
            anchored = set(memory_ids_anchored(ids, paths, organization_id, rows=sql_rows))
            paths_span.set_attribute("anchored", len(anchored))
    factor = float(settings.SEARCH_CODE_CHANGED_FACTOR)
    changed = code_changed_of(organization_id, ids)
    if not anchored and not changed:
        return hits
    for hit in hits:
        if hit.memory.id in anchored:
            b = hit.breakdown
            hit.breakdown = replace(b, path_boost=ANCHOR_PATH_BOOST, score=b.score * ANCHOR_PATH_BOOST)
        if hit.memory.id in changed:
            hit.code_changed = changed[hit.memory.id]
            if factor < 1.0:
                hit.breakdown = code_changed_apply(hit.breakdown, factor)
    hits.sort(key=lambda hit: (-hit.breakdown.score, hit.memory.id))
    return hits
