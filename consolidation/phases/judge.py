"""The judge: the LLM on close pairs — contradictions are linked for a moderator, clear
supersessions archive the older memory (only a high-confidence verdict acts), and every verdict is kept
(``ReviewItem``), because nothing is merged or synthesised together without one
(docs/consolidation.md#the-judge).

Which pairs: those not judged before, from the lowest similarity the judge reads
(``CONSOLIDATION_JUDGE_MIN_SIMILARITY``) up, plus every pair with conflict cues whatever its
similarity; cue pairs first, then the pairs close enough to be clustered (their verdict decides a
merge), then the rest, most similar first, at most ``CONSOLIDATION_MAX_JUDGED_PAIRS`` a run — the
others wait for the next run and are not merged meanwhile. A dry run asks the judge too (an LLM is
what decides) but writes nothing: its preview is what the run would do.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from consolidation import events
from consolidation.cues import conflict_cues, same_words
from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.prompts.judge import (
    CONTRADICTION_SYSTEM_PROMPT,
    SUPERSESSION_SYSTEM_PROMPT,
    build_contradiction_prompt,
    build_supersession_prompt,
    is_confident_contradiction,
    is_confident_supersession,
    parse_contradiction,
    parse_supersession,
)
from consolidation.prompts.judge_batch import (
    JUDGE_BATCH_SYSTEM_PROMPT,
    BatchMemory,
    BatchPair,
    PairVerdict,
    batch_max_tokens,
    build_judge_batch_prompt,
    parse_judge_batch,
)
from consolidation.run_state import (
    RunState,
    budget_refused,
    contradiction_band,
    link_add,
    llm_map,
    pair_key,
    reply_parsed,
    run_archive,
    run_llm,
)
from consolidation.selectors import Edge, ScannedMemory
from memories.models import Memory, MemoryLink
from memories.writes import memories_lock_active
from reasoningbank.scrubbing import scrub_secrets

logger = logging.getLogger("consolidation")


# judged before clustering: a contradicting pair above the cluster threshold must be flagged for a
# moderator, not blended into one synthesized memory
@phase_register(
    name="judge",
    order=40,
    description="ask the LLM judge about close pairs: link contradictions, archive clear supersessions",
    counters=(
        RunCounter("contradictions", "contradictions_found", "Contradicting pairs found and linked"),
        RunCounter("supersessions", "supersessions_detected", "Memories found superseded by a newer one"),
        # pairs found compatible without a call: the same content word for word
        RunCounter("cue_decided", dry_run_label="Would decide without the judge"),
    ),
)
def judge_step(state: RunState) -> None:
    pairs_judge(state, state.edges, state.memories)


@dataclass(frozen=True)
class Verdict:
    status: str  # a ReviewItem status
    reason: str
    supersedes: bool = False
    confidence: float = 0.0


def verdicts_load(state: RunState) -> None:
    """The project's settled pairs: compatible ones may merge (``state.cleared``)."""
    for first, second, status in (
        ReviewItem.objects.filter(organization_id=state.run.organization_id, project=state.project)
        .exclude(status=ReviewItem.STATUS_PENDING)
        .values_list("first_id", "second_id", "status")
    ):
        (state.cleared if status == ReviewItem.STATUS_COMPATIBLE else state.settled).add(pair_key(first, second))


def pairs_judge(state: RunState, edges: list[Edge], memories: dict[str, ScannedMemory]) -> None:
    verdicts_load(state)
    low, _ = contradiction_band()
    cluster_at = state.options.similarity_threshold
    open_pairs = [
        (a, b, s)
        for a, b, s in edges
        if a in memories
        and b in memories
        and (s >= low or pair_key(a, b) in state.conflicts)
        and pair_key(a, b) not in state.cleared
        and pair_key(a, b) not in state.settled
        # at or above the duplicate line without cues they were merged as duplicates already
        and (pair_key(a, b) in state.conflicts or s < contradiction_band()[1])
    ]
    if not open_pairs:
        return
    linked = {
        pair_key(source, target)
        for source, target in MemoryLink.objects.filter(
            organization_id=state.run.organization_id,
            kind__in=[MemoryLink.KIND_CONTRADICTS, MemoryLink.KIND_SUPERSEDES],
            source__project=state.project,
        ).values_list("source_id", "target_id")
    }
    # a pair already linked was judged before: by this org's judge (its verdict is a review item) or in
    # the bank it was imported from (links come along, verdicts do not). Settled either way: never
    # merged on similarity, never asked again — and possibly nothing is left to judge
    state.settled.update(pair_key(a, b) for a, b, _ in open_pairs if pair_key(a, b) in linked)
    open_pairs = [e for e in open_pairs if pair_key(e[0], e[1]) not in linked]
    if not open_pairs:
        return
    open_pairs.sort(key=lambda e: (pair_key(e[0], e[1]) not in state.conflicts, e[2] < cluster_at, -e[2], e[0], e[1]))
    limit = settings.CONSOLIDATION_MAX_JUDGED_PAIRS
    if len(open_pairs) > limit:
        state.warnings.append(
            f"{len(open_pairs) - limit} of {len(open_pairs)} pairs wait for the judge's next run "
            "(CONSOLIDATION_MAX_JUDGED_PAIRS); they are not merged meanwhile"
        )
    pairs: list[tuple[str, str, float]] = []
    for a, b, similarity in open_pairs[:limit]:
        older, newer = sorted((memories[a], memories[b]), key=lambda m: (m.created, m.id))
        pairs.append((older.id, newer.id, similarity))
    llm = run_llm(state)
    if llm.provider == "none":
        _wait_without_llm(state, pairs)
        return
    rows = {
        m.id: m
        for m in Memory.objects.filter(
            pk__in={mid for pair in pairs for mid in pair[:2]}, state=Memory.STATE_ACTIVE
        ).only("id", "title", "content", "created_at")
    }
    loaded = [(rows[o], rows[n], s) for o, n, s in pairs if o in rows and n in rows]
    # the pairs a cue decides are compatible without a call; the judge reads the rest
    asked = []
    for old, new, similarity in loaded:
        if _same_advice(state, old, new):
            state.counters["cue_decided"] += 1
            _apply(state, old, new, similarity, SAME_WORDS, memories, by="cue")
        else:
            asked.append((old, new, similarity))
    loaded = asked
    found = []
    for (old, new, similarity), verdict in zip(loaded, _verdicts(state, llm, loaded), strict=True):
        if _apply(state, old, new, similarity, verdict, memories) and verdict is not None:
            found.append(
                {"first": new.id, "second": old.id, "confidence": verdict.confidence, "explanation": verdict.reason}
            )
    if found and not state.dry:
        events.contradiction_detected.send(sender=ConsolidationRun, run=state.run, contradictions=found)


SAME_WORDS = Verdict(ReviewItem.STATUS_COMPATIBLE, "the same content word for word (decided without the judge)")


def _same_advice(state: RunState, older: Memory, newer: Memory) -> bool:
    """Whether the pair says the same thing in the same words, titles without a conflict cue and the pair
    without one either (docs/consolidation.md#pairs-decided-without-the-judge): compatible, no call."""
    return (
        pair_key(older.id, newer.id) not in state.conflicts
        and same_words(older.content, newer.content)
        and not conflict_cues(older.title, newer.title)
    )


def _wait_without_llm(state: RunState, pairs: list[tuple[str, str, float]]) -> None:
    conflicts = [(o, n, s) for o, n, s in pairs if pair_key(o, n) in state.conflicts]
    for older_id, newer_id, similarity in pairs:
        item: dict[str, Any] = {"older": older_id, "newer": newer_id, "similarity": round(similarity, 4)}
        if (conflict := state.conflicts.get(pair_key(older_id, newer_id))) is not None:
            item |= {"cues": list(conflict.cues), "then": "needs review (no LLM)"}
        state.note("judge_pairs", item)
    # the two counts are the review queue's two lists: "Waiting for an LLM" and the pairs a person decides
    if waiting := len(pairs) - len(conflicts):
        state.warnings.append(
            f"{waiting} pairs wait for an LLM to check for contradictions (the review queue lists them under "
            "“Waiting for an LLM”; nobody needs to decide them): not merged meanwhile, judged by the first run "
            "with an LLM"
        )
    if conflicts:
        state.warnings.append(
            f"{len(conflicts)} pairs with conflict cues need review (in the review queue): they are never merged"
        )
    if not state.dry:
        for older_id, newer_id, _ in conflicts:
            review_note(state, older_id, newer_id, ReviewItem.STATUS_PENDING, "no LLM is configured to judge them")


def _verdicts(state: RunState, llm: Any, pairs: list[tuple[Memory, Memory, float]]) -> list[Verdict | None]:
    """Batched (``CONSOLIDATION_JUDGE_BATCH_PAIRS`` pairs a call), or one pair at a time when it is 1."""
    if settings.CONSOLIDATION_JUDGE_BATCH_PAIRS > 1:
        return _verdicts_batched(state, llm, pairs)
    return _verdicts_per_pair(state, llm, pairs)


# a batch's memories' text is bounded too, so a few long memories do not make one huge prompt
# (about 6,000 tokens at 4 characters a token); a pair longer than that alone is asked alone
BATCH_PROMPT_CHARS = 24_000


def judge_batches(
    pairs: list[tuple[Memory, Memory, float]], batch_pairs: int, max_chars: int = BATCH_PROMPT_CHARS
) -> list[list[int]]:
    """The pairs (by index) packed into batches of at most ``batch_pairs`` pairs and about ``max_chars``
    characters of memory text. Pairs that share memories are packed together (each connected group in
    the order its first pair comes), so a memory in several pairs is listed once in a prompt."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for older, newer, _ in pairs:
        parent[root(older.id)] = root(newer.id)
    groups: dict[str, list[int]] = {}
    for i, (older, _, _) in enumerate(pairs):
        groups.setdefault(root(older.id), []).append(i)
    batches: list[list[int]] = []
    current: list[int] = []
    listed: set[str] = set()
    chars = 0
    for members in groups.values():
        for i in members:
            older, newer, _ = pairs[i]
            extra = sum(len(m.title) + len(m.content) for m in (older, newer) if m.id not in listed)
            if current and (len(current) >= batch_pairs or chars + extra > max_chars):
                batches.append(current)
                current, listed, chars = [], set(), 0
                extra = len(older.title) + len(older.content) + len(newer.title) + len(newer.content)
            current.append(i)
            listed.update((older.id, newer.id))
            chars += extra
    if current:
        batches.append(current)
    return batches


def _batch_prompt(pairs: list[tuple[Memory, Memory, float]], batch: list[int]) -> tuple[str, list[BatchPair]]:
    labels: dict[str, str] = {}
    memories: list[BatchMemory] = []
    asked: list[BatchPair] = []
    for n, i in enumerate(batch, start=1):
        older, newer, _ = pairs[i]
        for m in (older, newer):
            if m.id not in labels:
                labels[m.id] = f"M{len(labels) + 1}"
                memories.append(BatchMemory(labels[m.id], m.title, m.content, m.created_at))
        asked.append(BatchPair(f"P{n}", labels[older.id], labels[newer.id]))
    return build_judge_batch_prompt(memories, asked), asked


def _verdicts_batched(state: RunState, llm: Any, pairs: list[tuple[Memory, Memory, float]]) -> list[Verdict | None]:
    """One call per batch; the pairs a reply left out (or answered unreadably) are asked once more in
    new batches, then left undecided (judged again next run, never merged meanwhile)."""
    verdicts: list[Verdict | None] = [None] * len(pairs)
    todo = list(range(len(pairs)))
    for attempt in range(2):
        if not todo:
            break
        subset = [pairs[i] for i in todo]
        batches = judge_batches(subset, settings.CONSOLIDATION_JUDGE_BATCH_PAIRS)
        built = [_batch_prompt(subset, batch) for batch in batches]
        replies = llm_map(
            state,
            llm,
            "judge",
            [prompt for prompt, _ in built],
            system=JUDGE_BATCH_SYSTEM_PROMPT,
            max_tokens=batch_max_tokens(max(len(batch) for batch in batches)),
        )
        unanswered: list[int] = []
        for batch, (_, asked), reply in zip(batches, built, replies, strict=True):
            if budget_refused(reply):  # waits for the run's next pass (the budget, its LLM batch): no failure
                continue
            if isinstance(reply, Exception):  # the provider failed (after its own retries): next run
                state.warnings.append(f"batched judge of {len(batch)} pairs failed: {reply}")
                continue
            parsed = reply_parsed(state, reply, functools.partial(parse_judge_batch, pairs=asked), "batched judge")
            answered = parsed or {}
            for j, pair in zip(batch, asked, strict=True):
                index = todo[j]
                if pair.label in answered:
                    verdicts[index] = _batch_verdict(answered[pair.label])
                else:
                    unanswered.append(index)
        if unanswered and attempt == 0:
            state.warnings.append(f"the batched judge left {len(unanswered)} pairs unanswered; asked again")
        todo = unanswered
    return verdicts


def _batch_verdict(parsed: PairVerdict) -> Verdict:
    explanation = parsed.explanation or parsed.reasoning
    if parsed.verdict == "compatible":
        return Verdict(ReviewItem.STATUS_COMPATIBLE, explanation or "no contradiction")
    if not parsed.confident:
        return Verdict(ReviewItem.STATUS_PENDING, f"the judge was unsure: {explanation}")
    if parsed.verdict == "supersedes":
        return Verdict(ReviewItem.STATUS_CONTRADICTS, f"the newer supersedes the older: {explanation}", supersedes=True)
    return Verdict(ReviewItem.STATUS_CONTRADICTS, explanation, confidence=parsed.confidence)


def _verdicts_per_pair(state: RunState, llm: Any, pairs: list[tuple[Memory, Memory, float]]) -> list[Verdict | None]:
    """Supersession first (conservative), then the contradiction judge for the rest."""
    replies = llm_map(
        state,
        llm,
        "supersede",
        [
            build_supersession_prompt((o.title, o.content, o.created_at), (n.title, n.content, n.created_at))
            for o, n, _ in pairs
        ],
        system=SUPERSESSION_SYSTEM_PROMPT,
    )
    verdicts: list[Verdict | None] = [None] * len(pairs)
    undecided: list[int] = []
    for i, ((older, newer, _), reply) in enumerate(zip(pairs, replies, strict=True)):
        parsed = reply_parsed(state, reply, parse_supersession, f"supersession check {older.id}/{newer.id}")
        if parsed is not None and is_confident_supersession(parsed):
            reason = f"the newer supersedes the older: {parsed.reason or ''}"
            verdicts[i] = Verdict(ReviewItem.STATUS_CONTRADICTS, reason, supersedes=True)
        elif parsed is not None:
            undecided.append(i)
    if not undecided:
        return verdicts
    replies = llm_map(
        state,
        llm,
        "judge",
        [build_contradiction_prompt(pairs[i][0].content, pairs[i][1].content) for i in undecided],
        system=CONTRADICTION_SYSTEM_PROMPT,
    )
    for i, reply in zip(undecided, replies, strict=True):
        older, newer, _ = pairs[i]
        parsed = reply_parsed(state, reply, parse_contradiction, f"contradiction check {older.id}/{newer.id}")
        if parsed is None:
            continue
        explanation = parsed.explanation or parsed.reasoning
        if not parsed.contradicts:
            verdicts[i] = Verdict(ReviewItem.STATUS_COMPATIBLE, explanation or "no contradiction")
        elif is_confident_contradiction(parsed):
            verdicts[i] = Verdict(ReviewItem.STATUS_CONTRADICTS, explanation, confidence=parsed.confidence)
        else:
            verdicts[i] = Verdict(ReviewItem.STATUS_PENDING, f"the judge was unsure: {explanation}")
    return verdicts


def _apply(
    state: RunState,
    older: Memory,
    newer: Memory,
    similarity: float,
    verdict: Verdict | None,
    memories: dict[str, ScannedMemory],
    *,
    by: str = "judge",
) -> bool:
    """Act on one verdict (the judge's, or a cue's: ``by``); whether it linked a contradiction."""
    key = pair_key(older.id, newer.id)
    conflict = state.conflicts.get(key)
    if state.dry:
        item: dict[str, Any] = {
            "older": older.id,
            "newer": newer.id,
            "similarity": round(similarity, 4),
            "verdict": "no answer" if verdict is None else ("supersedes" if verdict.supersedes else verdict.status),
        }
        if conflict is not None:
            item["cues"] = list(conflict.cues)
        state.note("judge_pairs", item)
    if verdict is None:
        if conflict is not None and not state.dry:
            review_note(state, older.id, newer.id, ReviewItem.STATUS_PENDING, "the judge could not answer")
        return False  # judged again next run; not merged meanwhile
    if verdict.status == ReviewItem.STATUS_COMPATIBLE:
        state.cleared.add(key)
    if verdict.supersedes:
        memories.pop(older.id, None)  # the run goes on without it (a dry run too: same decisions)
        state.archived.append(older.id)
        state.counters["supersessions"] += 1
        state.counters["archived"] += 1
        if not state.dry:
            with transaction.atomic():
                if len(memories_lock_active([older.id, newer.id])) == 2:
                    run_archive(state, older.id, Memory.ARCHIVED_SUPERSEDED)
                    link_add(state, newer.id, older.id, MemoryLink.KIND_SUPERSEDES, similarity, verdict.reason)
    elif verdict.status == ReviewItem.STATUS_CONTRADICTS:
        state.counters["contradictions"] += 1
        state.settled.add(key)
        if not state.dry:
            # both stay active: a moderator decides (no silent invalidation)
            link_add(state, newer.id, older.id, MemoryLink.KIND_CONTRADICTS, verdict.confidence, verdict.reason)
    if not state.dry:
        review_note(state, older.id, newer.id, verdict.status, verdict.reason, by=by, similarity=similarity)
    return verdict.status == ReviewItem.STATUS_CONTRADICTS and not verdict.supersedes


def review_note(
    state: RunState,
    older_id: str,
    newer_id: str,
    status: str,
    reason: str,
    *,
    by: str = "",
    similarity: float | None = None,
) -> None:
    """Keep what became of a pair: a verdict (compatible / contradicts), or, for a pair with conflict
    cues only, "needs review" until a judge or a moderator settles it. A settled pair is never reopened
    by a later run."""
    conflict = state.conflicts.get(pair_key(older_id, newer_id))
    if conflict is None and status == ReviewItem.STATUS_PENDING:
        return  # a pair without cues is simply judged again next run
    item, _ = ReviewItem.objects.get_or_create(
        first_id=older_id,
        second_id=newer_id,
        defaults={
            "organization_id": state.run.organization_id,
            "project": state.project,
            "kind": ReviewItem.KIND_CONFLICT if conflict else ReviewItem.KIND_JUDGED,
            "similarity": conflict.similarity if conflict else round(similarity or 0.0, 4),
            "cues": list(conflict.cues) if conflict else [],
            "run": state.run,
        },
    )
    if item.status != ReviewItem.STATUS_PENDING:
        return
    item.run, item.reason = state.run, scrub_secrets(reason).text[:2000]
    if conflict is not None:
        item.similarity, item.cues = conflict.similarity, list(conflict.cues)
    if status != ReviewItem.STATUS_PENDING:
        item.status, item.decided_by, item.decided_at = status, by, timezone.now()
    item.save()
