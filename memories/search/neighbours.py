"""The neighbour stage of search (docs/search.md#neighbours): a memory is read with the memories
recorded next to it.

What an agent records in one sitting belongs together: a question and its answer, a failure and the fix
that followed, the steps of one task. The text that matches a query is often not the text that answers
it — the match is "did you ever go to the support group?", the answer the reply recorded right after.
So after fusion, each of the best-ranked hits (``NEIGHBOUR_PARENTS``) brings in the memories recorded
just before and after it in the same place (``NEIGHBOUR_WINDOW`` on each side), scored by both legs like
any candidate, and every memory's relevance becomes

    blended   = own + NEIGHBOUR_WEIGHT × the best own relevance among its linked memories
    relevance = blended / the query's best blended

where a memory's own relevance is what the stages before this one gave it (the fusion of both legs).

A memory whose neighbour matches the query rises (the answer next to the question); a hit whose
neighbours match too (a passage on the query's topic) gains over an isolated one. Dividing by the best
keeps the relevance in [0, 1] with the best memory at 1, as fusion does (so the usage floor reads it as
before), and two hits without linked memories in the order fusion gave them.

Measured on the LoCoMo development half (bench/README.md, "Neighbour stage and other ranking
attempts"): recall@10 0.663 → 0.75, MRR 0.516 → 0.54. The weight, window and parents sit on a plateau
there (weights 0.4–0.6, windows 2–3, 10–40 parents within about 0.015 recall@10), not at a fitted peak.

Pure functions, no Django: the selector fetches the neighbours (``memories.search.selectors``) and calls
these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# the best-ranked hits that bring in their neighbours: beyond the first ten, a neighbour's blended
# relevance no longer reaches a top-10 place (10, 20 and 40 measured alike)
NEIGHBOUR_PARENTS = 10
# memories on each side of a hit, in the order they were recorded in its place: a reply, and the
# speaker's next turn (1 on each side found half of what 2 find; 3–4 no more than 2)
NEIGHBOUR_WINDOW = 2
# the share of the best linked memory's relevance added to a memory's own (0.4–0.6: a plateau)
NEIGHBOUR_WEIGHT = 0.5


@dataclass(frozen=True)
class NeighbourScore:
    """One memory after the neighbour stage: its relevance, the relevance it had on its own, and the
    best of its linked memories (its id and own relevance; None and 0 when it has none)."""

    relevance: float
    own: float
    neighbour: str | None
    neighbour_relevance: float


def neighbour_links(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Links both ways from (hit, neighbour) pairs: a neighbour is linked to the hit that brought it in,
    and the hit to it."""
    links: dict[str, set[str]] = {}
    for hit, neighbour in pairs:
        if hit == neighbour:
            continue
        links.setdefault(hit, set()).add(neighbour)
        links.setdefault(neighbour, set()).add(hit)
    return links


def relevance_with_neighbours(
    own: Mapping[str, float], links: Mapping[str, Iterable[str]], *, weight: float = NEIGHBOUR_WEIGHT
) -> dict[str, NeighbourScore]:
    """Each memory's relevance blended with its best linked memory's own relevance (the module's
    formula). ``own`` holds every memory's relevance before this stage, in [0, 1]; a link to a memory
    not in ``own`` (left out by the filters) counts for nothing. Ties between linked memories go to the
    smaller id, so the explanation is stable."""
    if weight < 0:
        raise ValueError("weight must not be negative")
    best_of: dict[str, str | None] = {}
    blended: dict[str, float] = {}
    for memory_id, value in own.items():
        linked = sorted((other for other in links.get(memory_id, ()) if other in own), key=lambda o: (-own[o], o))
        best_of[memory_id] = linked[0] if linked else None
        blended[memory_id] = value + weight * (own[linked[0]] if linked else 0.0)
    top = max(blended.values(), default=0.0)
    return {
        memory_id: NeighbourScore(
            relevance=min(value / top, 1.0) if top > 0 else 0.0,
            own=own[memory_id],
            neighbour=best_of[memory_id],
            neighbour_relevance=own[best] if (best := best_of[memory_id]) is not None else 0.0,
        )
        for memory_id, value in blended.items()
    }
