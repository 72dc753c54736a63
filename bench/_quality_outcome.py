"""What a consolidation run did to the set's memories, read from the database or from a dry run's
preview, and how it scores against the labels (``consolidation_quality.py``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from _quality_set import DISAGREE, LABELS, MAY_CLUSTER, Dataset, PairSpec


@dataclass
class Bank:
    org: Any
    project: Any
    principal: Any
    ids: dict[str, str]  # ref → memory id
    refused: dict[str, str]  # ref → why the record service refused it (a write gate, say)
    seconds: float


@dataclass
class Outcome:
    """What one run did, in terms of the set's memories (refs)."""

    dup_groups: list[set[str]]  # merged as duplicates (the kept memory and the archived ones)
    clusters: list[set[str]]  # synthesised into one memory (duplicates folded into their kept one)
    contradicts: set[frozenset[str]]
    supersedes: set[tuple[str, str]]  # (newer, older)
    judged: set[frozenset[str]]  # pairs a dry run would send to the judge
    clusters_waiting: int = 0  # clusters a dry run lists as waiting for an LLM


def outcome_from_db(bank: Bank) -> Outcome:
    from memories.models import Memory, MemoryLink

    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    into = dict(
        Memory.objects.filter(organization=bank.org, consolidated_into__isnull=False).values_list(
            "id", "consolidated_into_id"
        )
    )
    dup_keep: dict[str, str] = {}
    contradicts: set[frozenset[str]] = set()
    supersedes: set[tuple[str, str]] = set()
    for kind, source, target in MemoryLink.objects.filter(organization=bank.org).values_list(
        "kind", "source_id", "target_id"
    ):
        if kind == MemoryLink.KIND_DUPLICATES:
            dup_keep[target] = source
        elif kind == MemoryLink.KIND_CONTRADICTS and source in ref_of and target in ref_of:
            contradicts.add(frozenset((ref_of[source], ref_of[target])))
        elif kind == MemoryLink.KIND_SUPERSEDES and source in ref_of and target in ref_of:
            supersedes.add((ref_of[source], ref_of[target]))

    def kept(mid: str) -> str:
        """The memory a duplicate was merged into (through chains, should a later run merge again)."""
        seen = set()
        while mid in dup_keep and mid not in seen:
            seen.add(mid)
            mid = dup_keep[mid]
        return mid

    keepers = set(dup_keep.values())
    dup_groups: dict[str, set[str]] = {}
    clusters: dict[str, set[str]] = {}
    for ref, mid in bank.ids.items():
        keep = kept(mid)
        if keep != mid or keep in keepers:  # archived as a duplicate, or the one kept for others
            dup_groups.setdefault(keep, set()).add(ref)
        if keep in into:
            clusters.setdefault(into[keep], set()).add(ref)
    return Outcome(
        [g for g in dup_groups.values() if len(g) > 1],
        [c for c in clusters.values() if len(c) > 1],
        contradicts,
        supersedes,
        set(),
    )


def outcome_from_preview(bank: Bank, preview: dict[str, Any]) -> tuple[Outcome, list[str]]:
    """A dry run's proposals as an Outcome, and the preview keys this bench could not read."""
    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    unread: list[str] = []
    dup_groups: list[set[str]] = []
    for entry in preview.get("duplicates", []):
        try:
            ids = [entry["keep"], *entry["archive"]]
        except (KeyError, TypeError):
            unread.append("duplicates")
            continue
        dup_groups.append({ref_of[i] for i in ids if i in ref_of})
    group_of = {ref: g for g in dup_groups for ref in g}
    clusters: list[set[str]] = []
    waiting = 0
    for entry in preview.get("clusters", []):
        members = entry.get("members") if isinstance(entry, dict) else None
        if members is None:
            unread.append("clusters")
            continue
        if "wait" in str(entry.get("then", "")):  # listed, but the run would not merge it (no LLM)
            waiting += 1
            continue
        refs = {ref_of[i] for i in members if i in ref_of}
        # a kept duplicate brings the memories merged into it
        refs |= {r for ref in list(refs) for r in group_of.get(ref, ())}
        clusters.append(refs)
    judged = set()
    for entry in preview.get("judge_pairs", []):
        try:
            judged.add(frozenset((ref_of[entry["older"]], ref_of[entry["newer"]])))
        except (KeyError, TypeError):
            unread.append("judge_pairs")
    outcome = Outcome(dup_groups, [c for c in clusters if len(c) > 1], set(), set(), judged, waiting)
    return outcome, sorted(set(unread))


# --- scoring ---------------------------------------------------------------------------------------------


def pairs_within(groups: Iterable[set[str]]) -> set[frozenset[str]]:
    return {frozenset(p) for g in groups for p in combinations(sorted(g), 2)}


def ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def by_cue(pairs: Iterable[PairSpec]) -> dict[str, list[PairSpec]]:
    out: dict[str, list[PairSpec]] = {}
    for p in pairs:
        out.setdefault(p.cue or "-", []).append(p)
    return out


def score(ds: Dataset, outcome: Outcome, present: set[str]) -> dict[str, Any]:
    """Pairwise precision and recall of each decision, and the disagreeing pairs that ended in one
    memory. Pairs with a memory the bank refused are left out of the recalls."""
    gold: dict[str, list[PairSpec]] = {label: [] for label in LABELS}
    for p in ds.pairs:
        if p.a in present and p.b in present:
            gold[p.label].append(p)
    dup_pairs = pairs_within(outcome.dup_groups)
    # one memory now stands for both: the same duplicate group, or the same synthesised cluster
    joined = dup_pairs | pairs_within(outcome.clusters)
    synth_pairs = pairs_within(outcome.clusters) - dup_pairs

    def labels_of(pairs: Iterable[frozenset[str]]) -> Counter[str]:
        return Counter(ds.label(*sorted(p)) for p in pairs)

    dup_labels, synth_labels = labels_of(dup_pairs), labels_of(synth_pairs)
    contra_labels = labels_of(outcome.contradicts)
    key = frozenset
    right_supersedes = sum(
        1
        for newer, older in outcome.supersedes
        if (p := ds.by_pair.get(key((newer, older)))) is not None
        and p.label == "supersession"
        and (p.a, p.b) == (older, newer)
    )
    disagreeing_joined = {label: [p for p in gold[label] if key((p.a, p.b)) in joined] for label in DISAGREE}
    synth_right = sum(synth_labels[label] for label in MAY_CLUSTER)
    return {
        "duplicate_merge": {
            "pairs": len(dup_pairs),
            "precision": ratio(dup_labels["duplicate"], len(dup_pairs)),
            "recall": ratio(sum(key((p.a, p.b)) in dup_pairs for p in gold["duplicate"]), len(gold["duplicate"])),
            "by_label": dict(dup_labels),
        },
        "cluster_membership": {
            "pairs": len(synth_pairs),
            "clusters": len(outcome.clusters),
            "precision": ratio(
                synth_right, synth_right + sum(synth_labels[label] for label in ("unrelated", *DISAGREE))
            ),
            "precision_strict": ratio(synth_right, len(synth_pairs)),
            "recall_paraphrase_detail": ratio(
                sum(key((p.a, p.b)) in joined for p in gold["paraphrase_detail"]), len(gold["paraphrase_detail"])
            ),
            "recall_duplicate_any_route": ratio(
                sum(key((p.a, p.b)) in joined for p in gold["duplicate"]), len(gold["duplicate"])
            ),
            "by_label": dict(synth_labels),
        },
        "contradiction_link": {
            "links": len(outcome.contradicts),
            "precision": ratio(contra_labels["contradiction"], len(outcome.contradicts)),
            "recall": ratio(
                sum(key((p.a, p.b)) in outcome.contradicts for p in gold["contradiction"]), len(gold["contradiction"])
            ),
            "recall_by_cue": {
                cue: ratio(sum(key((p.a, p.b)) in outcome.contradicts for p in group), len(group))
                for cue, group in sorted(by_cue(gold["contradiction"]).items())
            },
            "by_label": dict(contra_labels),
        },
        "supersession": {
            "links": len(outcome.supersedes),
            "precision": ratio(right_supersedes, len(outcome.supersedes)),
            "recall": ratio(right_supersedes, len(gold["supersession"])),
        },
        "disagreeing_merged": {
            "contradiction": len(disagreeing_joined["contradiction"]),
            "contradiction_as_duplicate": sum(
                key((p.a, p.b)) in dup_pairs for p in disagreeing_joined["contradiction"]
            ),
            "contradiction_synthesised": sum(
                key((p.a, p.b)) not in dup_pairs for p in disagreeing_joined["contradiction"]
            ),
            "supersession": len(disagreeing_joined["supersession"]),
            "contradiction_by_cue": dict(Counter(p.cue or "-" for p in disagreeing_joined["contradiction"])),
            "contradiction_items": sorted({p.item for p in disagreeing_joined["contradiction"]}),
        },
        "complementary_flagged_as_contradiction": contra_labels["complementary"],
        "gold_pairs": {label: len(v) for label, v in gold.items()},
    }


def parity(dry: Outcome, real: Outcome, dry_run: Any, real_run: Any) -> dict[str, Any]:
    """What the dry run proposed beside what the real run did on identical data."""
    dry_dup = {r for g in dry.dup_groups for r in g}
    real_dup = {r for g in real.dup_groups for r in g}
    dry_clusters = {frozenset(c) for c in dry.clusters}
    real_clusters = {frozenset(c) for c in real.clusters}
    return {
        "proposed": {
            "duplicate_groups": len(dry.dup_groups),
            "duplicate_archived": sum(len(g) - 1 for g in dry.dup_groups),
            "clusters": len(dry.clusters),
            "cluster_members": sum(len(c) for c in dry.clusters),
            "clusters_waiting_for_an_llm": dry.clusters_waiting,
            "judge_pairs": len(dry.judged),
            "archived": (dry_run.counters or {}).get("archived", 0),
        },
        "performed": {
            "duplicate_groups": len(real.dup_groups),
            "duplicate_archived": sum(len(g) - 1 for g in real.dup_groups),
            "clusters": len(real.clusters),
            "cluster_members": sum(len(c) for c in real.clusters),
            "contradiction_links": len(real.contradicts),
            "supersessions": len(real.supersedes),
            "archived": (real_run.counters or {}).get("archived", 0),
        },
        "same_duplicate_merges": dry_dup == real_dup,
        "clusters_identical": len(dry_clusters & real_clusters),
        "clusters_only_proposed": len(dry_clusters - real_clusters),
        "clusters_only_performed": len(real_clusters - dry_clusters),
    }
