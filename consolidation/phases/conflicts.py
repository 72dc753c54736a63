"""Before any merge (docs/consolidation.md#conflict-cues): find the close pairs whose texts disagree.
Every pair of the neighbour graph similar enough to be merged as duplicates or clustered for synthesis
is checked for conflict cues (``consolidation.cues``); a pair with cues is taken out of both merges and
handed to the judge (``phases.judge``), or, without one, waits in the review queue. A pair a judge or a
moderator found compatible (``ReviewItem`` status ``compatible``) is not held back again."""

from __future__ import annotations

from django.db.models import Q
from django.db.models.functions import Left

from consolidation.clustering import Cluster
from consolidation.cues import cue_profile, profile_cues
from consolidation.models import ReviewItem
from consolidation.run_state import Conflict, RunState, contradiction_band, duplicate_threshold, pair_key, run_llm
from consolidation.selectors import Edge, ScannedMemory
from memories.models import Memory

CUE_TEXT_CHARS = 2000  # of a memory's content read for cues (its advice is in the first lines)


def conflicts_find(state: RunState, memories: dict[str, ScannedMemory], edges: list[Edge]) -> None:
    floor = min(state.options.similarity_threshold, duplicate_threshold())
    close = [e for e in edges if e[2] >= floor and e[0] in memories and e[1] in memories]
    if not close:
        return
    ids = {mid for a, b, _ in close for mid in (a, b)}
    cleared = {
        pair_key(first, second)
        for first, second in ReviewItem.objects.filter(
            Q(first_id__in=ids) | Q(second_id__in=ids),
            organization_id=state.run.organization_id,
            status=ReviewItem.STATUS_COMPATIBLE,
        ).values_list("first_id", "second_id")
    }
    profiles = {
        mid: cue_profile(f"{title}\n{description}\n{content}")
        for mid, title, description, content in Memory.objects.filter(pk__in=ids)
        .annotate(head=Left("content", CUE_TEXT_CHARS))
        .values_list("id", "title", "description", "head")
    }
    for a, b, similarity in close:
        key = pair_key(a, b)
        if key in cleared or a not in profiles or b not in profiles:
            continue
        cues = profile_cues(profiles[a], profiles[b])
        if cues:
            state.conflicts[key] = Conflict(round(similarity, 4), tuple(str(c) for c in cues))
    state.counters["conflicts"] = len(state.conflicts)


def edges_without_conflicts(state: RunState, edges: list[Edge]) -> list[Edge]:
    """The graph the merges may use: no edge between memories that disagree."""
    if not state.conflicts:
        return edges
    return [e for e in edges if pair_key(e[0], e[1]) not in state.conflicts]


def clusters_without_conflicts(
    state: RunState, clusters: list[Cluster[str]], edges: list[Edge], *, min_size: int
) -> list[Cluster[str]]:
    """The clusters with no two members that may not be merged — a pair with conflict cues, or, when
    an LLM will synthesise, a pair the judge reads (similar enough) that it has not found compatible.
    While such a pair remains in a cluster the member in the most of them leaves (on a tie, the later
    id: the newer memory); a cluster left too small is dropped. Average linkage can join two memories
    through their common neighbours, so filtering the edges alone does not guarantee it."""
    similarity = {pair_key(a, b): s for a, b, s in edges}
    judged_from = contradiction_band()[0]
    verdict_needed = run_llm(state).provider != "none"

    def blocked(a: str, b: str) -> bool:
        key = pair_key(a, b)
        if key in state.conflicts:
            return True
        return verdict_needed and similarity.get(key, 0.0) >= judged_from and key not in state.cleared

    kept: list[Cluster[str]] = []
    for cluster in clusters:
        members = list(cluster.member_ids)
        while True:
            counts: dict[str, int] = {}
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    if blocked(a, b):
                        counts[a] = counts.get(a, 0) + 1
                        counts[b] = counts.get(b, 0) + 1
            if not counts:
                break
            members.remove(max(counts, key=lambda mid: (counts[mid], mid)))
        if len(members) == len(cluster.member_ids):
            kept.append(cluster)
        elif len(members) >= min_size:
            pairs = [similarity.get(pair_key(a, b), 0.0) for i, a in enumerate(members) for b in members[i + 1 :]]
            kept.append(Cluster(tuple(members), sum(pairs) / len(pairs), min(pairs)))
    return kept
