"""Similarity clustering over a sparse neighbour graph, free of Django.

The textbook way is "compute the pairwise similarity matrix, then group" (for instance scikit-learn's
agglomerative average linkage on a precomputed cosine distance matrix;
docs/decisions.md#clustering-over-a-sparse-neighbour-graph). An all-pairs matrix is quadratic: 100,000
memories would need 80 GB of float64. We never build one. The database's HNSW index returns, for each
memory, its nearest neighbours above the similarity threshold; those *edges* are the only input here,
and every pair that is not an edge is treated as similarity 0 (i.e. "not similar"), exactly as if the
full matrix had been filled with zeros below the threshold.

Why the sparse graph is enough (and the result is exact, not an approximation):

* Two clusters can only merge when their linkage similarity is >= threshold > 0. If no edge joins
  them, every cross pair counts as 0, so their linkage is 0 and they never merge. Merges therefore
  happen only along edges, and the work is proportional to the number of edges, not to n^2.
* In particular the clustering decomposes over the connected components of the edge graph: a
  cluster never spans two components. We therefore do not materialise components, build a dense
  matrix per component, or cap and pre-split giant components (a split would make the result
  approximate): the merge queue below already only ever touches edges, so a 100,000-memory
  component formed by one long chain costs the same as many small ones with as many edges.

The greedy procedure is the classic one (repeatedly merge the most similar pair of clusters while
that similarity is >= threshold), with two deliberate, documented differences from scikit-learn:

* the threshold is inclusive: a pair *exactly* at the threshold clusters (sklearn merges only
  when distance < distance_threshold, i.e. similarity strictly above it); and
* ties are broken deterministically: among equally similar pairs of clusters, the one whose
  smallest member ids sort first merges first, so the output never depends on input order.

Cost: roughly O(E log E) for E edges -- proportional to the edges handed in, never to n^2. Each
merge touches only the two clusters' neighbour lists, and in a k-nearest-neighbour graph clusters
stay small: two clusters merge only if the edges between them sum to >= t * |A| * |B|, which
bounds a cluster at about 2k/t members. Measured on the (slow, shared) development container:
100,000 ids with 500,000 edges (5 per id) take 2.2-3.2 s of CPU for either linkage and under 1 s
for ``connected_components``. The caller keeps E small by asking the index for a bounded number
of neighbours per memory; a dense input (every pair an edge) is quadratic because E is.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    # numpy is imported inside the functions that use it: the app's start-up (every manage.py command)
    # imports this module through the consolidation phases and clusters nothing (docs/commands.md#start-up)
    import numpy as np
    import numpy.typing as npt

    Vector = Sequence[float] | npt.NDArray[Any]
    IntArray = npt.NDArray[np.int64]
    FloatArray = npt.NDArray[np.float64]

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# Similarities coming from the database are ``1 - cosine_distance`` and our averages are sums
# divided by pair counts; both carry float noise of a few ulps. Without a tolerance, a pair meant
# to sit exactly on the threshold could land at 0.7999999999999999 and flip. 1e-9 is far below
# any meaningful difference in similarity, so it only absorbs arithmetic noise.
SIMILARITY_TOLERANCE: Final = 1e-9

# A cluster of >= 2 members is consolidated, one of more than 20 is not (larger groups
# are too broad to synthesise into one memory, so they are left for a stricter threshold).
DEFAULT_MIN_CLUSTER_SIZE: Final = 2
DEFAULT_MAX_CLUSTER_SIZE: Final = 20

# Duplicates merge without an LLM at this similarity unless the embedder's calibrated threshold says
# otherwise (docs/consolidation.md#thresholds).
DEFAULT_DUPLICATE_THRESHOLD: Final = 0.95


class _SortableId(Hashable, Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


IdT = TypeVar("IdT", bound=_SortableId)

# (id_a, id_b, similarity): one neighbour pair, as returned by the vector index.
Edge = tuple[IdT, IdT, float]

Linkage = Literal["average", "complete"]


@dataclass(frozen=True)
class Cluster(Generic[IdT]):
    """A group of similar memories with its similarity statistics.

    ``average_similarity`` and ``min_similarity`` are over every unordered pair of members; a pair
    with no edge counts as 0, so a loosely connected cluster shows it in its stats. A one-member
    cluster (only possible with ``min_size=1``) reports 1.0 for both: a memory is identical to
    itself.
    """

    member_ids: tuple[IdT, ...]
    average_similarity: float
    min_similarity: float

    @property
    def size(self) -> int:
        return len(self.member_ids)


def cosine_similarity(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors; 0.0 when either is all zeros (no direction, no match)."""
    import numpy as np

    va = np.asarray(a, dtype=np.float64).ravel()
    vb = np.asarray(b, dtype=np.float64).ravel()
    if va.shape != vb.shape:
        raise ValueError(f"vectors differ in length: {va.shape[0]} != {vb.shape[0]}")
    norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
    if norm == 0.0:
        return 0.0
    # Clip: rounding can push parallel vectors to 1.0000000000000002.
    return float(np.clip(np.dot(va, vb) / norm, -1.0, 1.0))


def connected_components(
    n_or_ids: int | Sequence[IdT],
    edges: Iterable[Edge[Any]],
    *,
    min_similarity: float | None = None,
) -> list[tuple[Any, ...]]:
    """Connected components of the neighbour graph, via union-find (no matrix, O(E α(n))).

    ``n_or_ids`` is either a count (ids are then ``0..n-1``) or the ids themselves. Every id is in
    exactly one component, singletons included. Edges naming an unknown id are ignored (a
    neighbour query may return rows outside the candidate set, e.g. archived memories); with
    ``min_similarity`` only edges at or above it connect. Components are sorted internally and
    ordered by their smallest id.
    """
    ids = _sorted_unique_ids(n_or_ids)
    lo, hi, similarity = _edge_arrays(
        {item: k for k, item in enumerate(ids)}, edges, with_similarity=min_similarity is not None
    )
    if min_similarity is not None:
        strong = similarity >= min_similarity - SIMILARITY_TOLERANCE
        lo, hi = lo[strong], hi[strong]
    parent = list(range(len(ids)))
    size = [1] * len(ids)

    def find(x: int) -> int:
        # Path halving: keeps trees flat without recursion (deep recursion on 100k chains fails).
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra == rb:
            continue
        if size[ra] < size[rb]:  # union by size keeps find() cheap
            ra, rb = rb, ra
        parent[rb] = ra
        size[ra] += size[rb]

    groups: dict[int, list[int]] = {}
    for k in range(len(ids)):  # ascending k, so each group's list is already sorted
        groups.setdefault(find(k), []).append(k)
    ordered = sorted(groups.values(), key=lambda members: members[0])
    return [tuple(ids[k] for k in members) for members in ordered]


def average_linkage_clusters(
    ids: Sequence[IdT],
    edges: Iterable[Edge[IdT]],
    threshold: float,
    *,
    min_size: int = DEFAULT_MIN_CLUSTER_SIZE,
    max_size: int = DEFAULT_MAX_CLUSTER_SIZE,
) -> list[Cluster[IdT]]:
    """Agglomerative average-linkage clustering (distance_threshold = 1 - threshold).

    Two clusters merge while the mean similarity over all their cross pairs (missing pairs = 0,
    which pulls the mean down) is >= ``threshold``. Clusters outside ``[min_size, max_size]`` are
    dropped afterwards (the agglomeration itself is not cut short at
    ``max_size``: an over-broad group is discarded whole rather than arbitrarily truncated).
    Output: clusters ordered by smallest member id, members sorted.
    """
    return _agglomerate(ids, edges, threshold, "average", min_size=min_size, max_size=max_size)


def duplicate_groups(
    ids: Sequence[IdT],
    edges: Iterable[Edge[IdT]],
    threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
) -> list[Cluster[IdT]]:
    """Groups of near-identical memories for the no-LLM duplicate merge (>= ``threshold``).

    Complete linkage: two groups merge only if *every* cross pair is an edge >= ``threshold``, so
    a chain A~B~C (A and C not similar) never puts A and C together -- merging them would archive
    C as a "duplicate" of something it does not duplicate. Groups of size >= 2, any size.
    """
    return _agglomerate(ids, edges, threshold, "complete", min_size=2, max_size=None)


def _sorted_unique_ids(n_or_ids: int | Sequence[IdT]) -> list[Any]:
    if isinstance(n_or_ids, int):
        if n_or_ids < 0:
            raise ValueError("item count must be >= 0")
        return list(range(n_or_ids))
    # Sorting gives every run the same internal order, which is what makes tie-breaking and
    # output order independent of how the caller happened to list the ids.
    ids = sorted(n_or_ids)
    if any(ids[k] == ids[k + 1] for k in range(len(ids) - 1)):
        raise ValueError("ids must be unique")
    return ids


def _edge_arrays(
    index: dict[Any, int], edges: Iterable[Edge[Any]], *, with_similarity: bool = True
) -> tuple[IntArray, IntArray, FloatArray]:
    """Map edges to (lo, hi, similarity) index arrays: lo < hi, one row per unordered pair,
    sorted by (lo, hi).

    The per-edge work is done by C-level ``map`` and numpy rather than a Python loop, because at
    100,000 memories x 5 neighbours this preprocessing would otherwise dominate the run. Edges
    naming an unknown id and self-loops are dropped; when a pair is listed twice (a k-NN query
    returns both (a, b) and (b, a)) the larger similarity is kept, so float noise between the
    two directions cannot double-count or flip a pair.
    """
    import numpy as np

    edge_list = edges if isinstance(edges, list | tuple) else list(edges)
    count = len(edge_list)
    first = np.fromiter(map(index.get, map(itemgetter(0), edge_list), repeat(-1)), dtype=np.int64, count=count)
    second = np.fromiter(map(index.get, map(itemgetter(1), edge_list), repeat(-1)), dtype=np.int64, count=count)
    if with_similarity:
        similarity = np.fromiter(map(itemgetter(2), edge_list), dtype=np.float64, count=count)
    else:
        similarity = np.ones(count, dtype=np.float64)

    keep = (first >= 0) & (second >= 0) & (first != second)
    nan = keep & np.isnan(similarity)
    if nan.any():
        bad = edge_list[int(np.flatnonzero(nan)[0])]
        raise ValueError(f"similarity for ({bad[0]!r}, {bad[1]!r}) is NaN")
    first, second, similarity = first[keep], second[keep], similarity[keep]
    lo, hi = np.minimum(first, second), np.maximum(first, second)

    # Sort by pair (a single-key stable sort is far cheaper than a lexsort) and keep each
    # pair's best similarity. The result is ordered by (lo, hi), which the caller relies on.
    pair = lo * max(len(index), 1) + hi
    order = np.argsort(pair, kind="stable")
    pair, lo, hi, similarity = pair[order], lo[order], hi[order], similarity[order]
    if pair.size == 0:
        return lo, hi, similarity
    starts = np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))
    return lo[starts], hi[starts], np.maximum.reduceat(similarity, starts)


def _agglomerate(
    ids_in: Sequence[IdT],
    edges: Iterable[Edge[IdT]],
    threshold: float,
    linkage: Linkage,
    *,
    min_size: int,
    max_size: int | None,
) -> list[Cluster[IdT]]:
    import numpy as np

    # threshold <= 0 would make "missing pair = 0" count as similar and merge unrelated memories.
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold must be in (0, 1]")
    if min_size < 1:
        raise ValueError("min_size must be >= 1")
    if max_size is not None and max_size < min_size:
        raise ValueError("max_size must be >= min_size")

    ids = _sorted_unique_ids(ids_in)
    n = len(ids)
    lo, hi, similarity = _edge_arrays({item: k for k, item in enumerate(ids)}, edges)
    cut = threshold - SIMILARITY_TOLERANCE
    complete = linkage == "complete"
    max_similarity = float(similarity.max()) if similarity.size else 0.0

    # Clusters are named by their smallest member index (their "rep"); ids are sorted, so that
    # is also their smallest id, which is what ties are broken on. For every pair of clusters
    # joined by at least one edge, ``links[x][y]`` holds what the linkage needs about their
    # cross edges: the sum of similarities (average) or (min similarity, edge count) (complete).
    links = _initial_links(n, lo, hi, similarity, complete=complete)

    # The queue of candidate merges is two streams, always consumed best-first:
    # * every edge >= threshold, pre-sorted once by numpy as (-similarity, lo, hi) -- each stays
    #   valid only while both ends are still unmerged singletons;
    # * a heap of the pairs re-scored after a merge, tagged with the merge "version" of both
    #   sides so entries made stale by a later merge are skipped.
    # Most merges in a k-NN graph are singleton pairs, so most work stays in the sorted stream
    # and the heap stays small.
    candidates = np.flatnonzero(similarity >= cut)  # already in (lo, hi) order...
    candidates = candidates[np.argsort(-similarity[candidates], kind="stable")]  # ...kept on ties
    static_value = similarity[candidates].tolist()
    static_lo = lo[candidates].tolist()
    static_hi = hi[candidates].tolist()

    heap: list[tuple[float, int, int, int, int]] = []
    heappush, heappop = heapq.heappush, heapq.heappop  # hot loop: skip attribute lookups
    size = [1] * n
    version = [0] * n  # bumped each time a cluster absorbs another
    alive = [True] * n
    fresh = [True] * n  # never merged yet: the only state in which a static edge is current
    parent = list(range(n))

    def merge(a: int, b: int) -> None:
        """Merge cluster b into cluster a (a < b, so a keeps the smallest member index)."""
        links_a, links_b = links[a], links[b]
        del links_a[b], links_b[a]
        common = links_a.keys() & links_b.keys()
        for c in common:  # neighbours of both sides: combine the two records
            record_a, record_b = links_a[c], links_b.pop(c)
            if complete:
                record = (min(record_a[0], record_b[0]), record_a[1] + record_b[1])
            else:
                record = record_a + record_b
            links_a[c] = record
            links_c = links[c]
            del links_c[b]
            links_c[a] = record
        for c, record in links_b.items():  # neighbours of b only: re-key them to a
            links_c = links[c]
            del links_c[b]
            links_c[a] = record
        links_a.update(links_b)
        links[b] = {}
        size_b = size[b]
        size_a = size[a] = size[a] + size_b
        alive[b] = fresh[a] = fresh[b] = False
        parent[b] = a
        version[a] += 1

        # Every pair involving the merged cluster has a new linkage; queue those that qualify.
        # A neighbour of only one side has no edge to the other side's members, so its linkage
        # is 0 (complete) or at most max_similarity * (that side's share of the merged cluster)
        # (average); when that bound is below the cut only the common neighbours need scoring,
        # which skips most of the work for the usual singleton + singleton merge.
        if complete or max_similarity * max(size_a - size_b, size_b) < cut * size_a:
            rescore: Iterable[int] = common
        else:
            rescore = links_a
        version_a = version[a]
        for c in rescore:
            record = links_a[c]
            pairs = size_a * size[c]
            if complete:
                # complete linkage: the least similar cross pair; any missing pair counts as 0
                value = record[0] if record[1] == pairs else min(record[0], 0.0)
            else:
                value = record / pairs
            if value >= cut:
                if a < c:
                    heappush(heap, (-value, a, c, version_a, version[c]))
                else:
                    heappush(heap, (-value, c, a, version[c], version_a))

    for value, a, b in zip(static_value, static_lo, static_hi, strict=True):
        if not (fresh[a] and fresh[b]):
            continue  # one end has merged since: its pairs now live in the heap
        if heap:
            # Re-scored pairs that rank before this edge merge first; they may consume a or b.
            key = (-value, a, b)
            while heap and heap[0][:3] < key:
                _, x, y, version_x, version_y = heappop(heap)
                if alive[x] and alive[y] and version[x] == version_x and version[y] == version_y:
                    merge(x, y)
            if not (fresh[a] and fresh[b]):
                continue
        merge(a, b)
    while heap:
        _, x, y, version_x, version_y = heappop(heap)
        if alive[x] and alive[y] and version[x] == version_x and version[y] == version_y:
            merge(x, y)

    return _collect_clusters(ids, parent, size, lo, hi, similarity, min_size, max_size)


def _initial_links(
    n: int, lo: IntArray, hi: IntArray, similarity: FloatArray, *, complete: bool
) -> list[dict[int, Any]]:
    """Per-item neighbour dicts, built row by row from a numpy-sorted adjacency list.

    Building each row with one ``dict(zip(...))`` call keeps the per-edge work in C; a Python
    loop doing two dict insertions per edge was the slowest part of a 100,000-item run.
    """
    import numpy as np

    source = np.concatenate([lo, hi])
    target = np.concatenate([hi, lo])
    values = np.concatenate([similarity, similarity])
    order = np.argsort(source, kind="stable")
    degree = np.bincount(source, minlength=n).tolist()
    targets = iter(target[order].tolist())
    sims = values[order].tolist()
    # complete linkage needs (min similarity, edge count); a single edge is (s, 1)
    records = iter(list(zip(sims, repeat(1))) if complete else sims)
    return [dict(zip(islice(targets, d), islice(records, d), strict=True)) for d in degree]


def _collect_clusters(
    ids: list[Any],
    parent: list[int],
    size: list[int],
    lo: IntArray,
    hi: IntArray,
    similarity: FloatArray,
    min_size: int,
    max_size: int | None,
) -> list[Cluster[Any]]:
    """Turn the merge forest into sorted Clusters with their pair statistics."""
    import numpy as np

    n = len(ids)
    for k in range(n):  # every parent has a smaller index, so one ascending pass finds roots
        parent[k] = parent[parent[k]]
    roots = np.asarray(parent, dtype=np.int64)
    sizes = np.asarray(size, dtype=np.int64)[roots]
    kept = sizes >= min_size
    if max_size is not None:
        kept &= sizes <= max_size
    if not kept.any():
        return []
    label = np.where(kept, roots, -1)

    # Pair statistics over the edges inside each kept cluster, vectorised: sum, count and min.
    inside = (label[lo] >= 0) & (label[lo] == label[hi])
    owner, values = label[lo][inside], similarity[inside]
    sums = np.bincount(owner, weights=values, minlength=n).tolist()
    counts = np.bincount(owner, minlength=n).tolist()
    by_owner = np.lexsort((values, owner))  # within each owner, the smallest similarity first
    first = np.ones(by_owner.shape[0], dtype=bool)
    first[1:] = owner[by_owner][1:] != owner[by_owner][:-1]
    minimums = np.full(n, np.inf)
    minimums[owner[by_owner][first]] = values[by_owner][first]
    minimum_of = minimums.tolist()  # plain lists: per-cluster numpy scalar indexing is slow

    # Members grouped by root; a stable sort keeps them in ascending (= sorted id) order.
    member_index = np.flatnonzero(kept)
    member_index = member_index[np.argsort(label[member_index], kind="stable")].tolist()
    clusters: list[Cluster[Any]] = []
    start = 0
    while start < len(member_index):
        r = parent[member_index[start]]
        count = size[r]
        group = member_index[start : start + count]
        start += count
        if count == 1:
            average, minimum = 1.0, 1.0
        else:
            pairs = count * (count - 1) // 2
            average = sums[r] / pairs
            minimum = minimum_of[r]
            if counts[r] < pairs:  # some pair has no edge: it counts as 0
                minimum = min(minimum, 0.0)
        clusters.append(
            Cluster(
                member_ids=tuple(map(ids.__getitem__, group)),
                average_similarity=average,
                min_similarity=minimum,
            )
        )
    # Roots are the smallest member index, so sorting by root = sorting by smallest member id.
    return clusters
