"""Consolidation quality on a labelled set (docs/consolidation.md#thresholds): what the real consolidation run merges,
synthesises, links and supersedes, against labels, per embedder and judge.

    .venv/bin/python bench/consolidation_quality.py                       # hashing + minilm, every judge mode
    .venv/bin/python bench/consolidation_quality.py --embedders minilm --modes scripted none
    .venv/bin/python bench/consolidation_quality.py --similarity-only      # cosine distributions only, no runs
    .venv/bin/python bench/consolidation_quality.py --sample 4             # every 4th item: a quick look

The set is ``bench/data/consolidation_set.jsonl`` (format: ``bench/data/README.md``): items of one to
four memories with a label per pair — duplicate, paraphrase_detail, complementary, contradiction,
supersession, unrelated; a pair of two different items is "cross-item" (no relation intended).

For each embedder (``hashing``, ``minilm``; one that cannot be built here is reported and skipped):

1. **Similarities** (numpy): every memory's text exactly as the record service embeds it
   (``title\\ndescription\\ncontent`` of the validated, scrubbed draft), cosine of every labelled pair
   and of every cross-item pair; per label min / p10 / median / p90 / max; the thresholds the set
   supports (duplicate precision ≥ 0.99, cluster precision ≥ 0.99, the band that sends 95% / 100%
   of the disagreeing pairs to the judge) and what the product's thresholds give.
2. **Runs**, per judge mode, each on a fresh org ``cq-<embedder>-<mode>`` (enterprise plan) with one
   project: every memory recorded through ``memories.core.services.memory_record_or_duplicate`` (the
   vectors computed in step 1 are served to it, on-demand consolidation disconnected while
   loading), dated memories placed in the last 25 days in their order; then a **dry run** and the
   **real run** on the same data — ``consolidation_request`` + ``consolidation_execute(run_id,
   llm=…)``, as ``tests/consolidation/vectors.py`` ``run_cycle`` does, with the product's own
   thresholds. Modes:

   - ``scripted``: an LLM that answers from the labels (``LabelJudge``): the supersession check says
     "supersedes, high" only for a pair labelled supersession in its dated direction, the
     contradiction judge "contradicts, 0.9" only for a pair labelled contradiction (or
     supersession); synthesis and summary prompts get well-formed replies. The product's cap of
     judged pairs per run (``MAX_JUDGED_PAIRS``) applies.
   - ``scripted-all``: the same judge with that cap lifted (patched in ``consolidation.phases.judge``
     for the run), to separate what the thresholds do from what the cap does.
   - ``none``: ``reasoningbank.ai.llm.NoLLM`` — the judge and synthesis wait.

3. **What happened**, read from the database: ``MemoryLink`` kinds duplicates / contradicts /
   supersedes / consolidates, ``Memory.state`` / ``archived_reason`` / ``consolidated_into``. Each
   original memory is followed to the memory that now stands for it (duplicate → its kept memory,
   consolidated → the synthesised memory); two memories "ended in one memory" when they arrive at
   the same one. Per decision, pairwise precision and recall:

   - duplicate merge: pairs merged as duplicates; right when labelled duplicate; recall over the
     duplicate pairs;
   - cluster membership (synthesis): pairs synthesised into one memory; right when labelled
     duplicate, paraphrase_detail or complementary ("strict" also counts cross-item pairs as wrong);
     recall: paraphrase_detail pairs that ended in one memory (by either route);
   - contradiction link: ``contradicts`` links; right when labelled contradiction; recall over them;
   - supersession: ``supersedes`` links newer → older; right when labelled supersession in that
     direction; recall over them;
   - **disagreeing pairs merged**: contradiction pairs that ended in one memory (target 0), and
     supersession pairs that did (merged instead of superseded).

   The dry run's preview (duplicate groups, clusters, pairs for the judge) is scored the same way
   and compared with what the real run did on identical data.

Data: a dedicated embedded PostgreSQL, ``RB_DATA_DIR=<repo>/.data/bench-quality`` unless set. Results:
``bench/results/consolidation-quality-<date>.json``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _product import bank_reset, embedder_build, embedder_settings, on_demand_consolidation_off
from _quality_judge import LabelJudge
from _quality_outcome import Bank, outcome_from_db, outcome_from_preview, parity, score
from _quality_set import DATASET, SCHEMA_VERSION, Dataset, dataset_load, similarity_report
from common import REPO, RESULTS_DIR, django_setup, log, machine_info, revision, write_json

DATA_DIR = REPO / ".data" / "bench-quality"
DEFAULT_EMBEDDERS = ("hashing", "minilm")
MODES = ("scripted", "scripted-all", "none")
ORG_PREFIX = "cq-"
# dated memories are placed in this window before now: older than 30 days would make the run's stale
# archival take them (they have no usage), which is not what the set measures
DATED_WINDOW = (timedelta(days=25), timedelta(days=1))


# --- the database side ----------------------------------------------------------------------------------


@contextlib.contextmanager
def judge_cap(lifted: bool) -> Iterator[int | None]:
    """Yield the judge's per-run cap in force (``CONSOLIDATION_MAX_JUDGED_PAIRS``); lifted, the setting
    is raised for the duration (bench only: the product keeps its cap)."""
    from django.conf import settings

    cap = int(settings.CONSOLIDATION_MAX_JUDGED_PAIRS)
    if not lifted:
        yield cap
        return
    settings.CONSOLIDATION_MAX_JUDGED_PAIRS = 10**9
    try:
        yield None
    finally:
        settings.CONSOLIDATION_MAX_JUDGED_PAIRS = cap


def product_thresholds() -> dict[str, float]:
    """The thresholds the product applies now (settings; their defaults depend on the embedder)."""
    from django.conf import settings

    return {
        "duplicate": float(settings.CONSOLIDATION_DUPLICATE_THRESHOLD),
        "cluster": float(settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD),
        "band_low": float(settings.CONSOLIDATION_JUDGE_MIN_SIMILARITY),
        "band_high": float(settings.CONSOLIDATION_DUPLICATE_THRESHOLD),
    }


def consolidation_settings() -> dict[str, Any]:
    from django.conf import settings

    return {name: getattr(settings, name) for name in dir(settings) if name.startswith("CONSOLIDATION_")}


def embedded_texts(ds: Dataset) -> dict[str, str]:
    """ref → the text the record service embeds for it (the validated, scrubbed draft's fields)."""
    from memories.core.services import memory_draft
    from memories.embedding import memory_embedding_text

    out = {}
    for m in ds.memories:
        draft = memory_draft(title=m.title, description=m.description, content=m.content, outcome=m.outcome)
        out[m.ref] = memory_embedding_text(draft.title, draft.description, draft.content)
    return out


def dated_placement(ds: Dataset, now: datetime) -> dict[str, datetime]:
    """Dated memories in the last 25 days, in their order and proportions (supersession needs the
    order; stale archival would take memories idle for 30 days)."""
    dated = {m.ref: m.created_at for m in ds.memories if m.created_at is not None}
    if not dated:
        return {}
    first, last = min(dated.values()), max(dated.values())
    span = (last - first).total_seconds() or 1.0
    start, end = now - DATED_WINDOW[0], now - DATED_WINDOW[1]
    return {ref: start + (end - start) * ((at - first).total_seconds() / span) for ref, at in dated.items()}


def bank_load(ds: Dataset, slug: str, vectors: dict[str, list[float]], texts: dict[str, str], embedder: Any) -> Bank:
    """A fresh org with one project holding the set, recorded through the product's record service."""
    from django.db import transaction
    from django.utils import timezone

    from accounts.access import principal_for_token
    from accounts.services import organization_create, project_create, token_create
    from memories.core.services import memory_record_or_duplicate
    from memories.models import Memory
    from reasoningbank.errors import ServiceError

    started = time.perf_counter()
    bank_reset(slug)
    org = organization_create(slug=slug, name=f"Consolidation quality bench ({slug})", plan="enterprise")
    project = project_create(organization=org, slug="set", actor=None)
    token, _raw = token_create(organization=org, label="bench-quality", projects=[project])
    principal = principal_for_token(token)
    served = {texts[ref]: vectors[ref] for ref in texts}
    original = embedder.embed

    def embed(batch: Sequence[str]) -> list[list[float]]:
        # the vectors of step 1, so each embedder embeds the set once per invocation
        if batch and all(t in served for t in batch):
            return [served[t] for t in batch]
        return original(batch)  # type: ignore[no-any-return]

    ids: dict[str, str] = {}
    refused: dict[str, str] = {}
    embedder.embed = embed  # the cached instance the record service gets from settings
    try:
        with on_demand_consolidation_off(), transaction.atomic():
            for m in ds.memories:
                try:
                    with transaction.atomic():
                        result = memory_record_or_duplicate(
                            principal=principal,
                            title=m.title,
                            description=m.description,
                            content=m.content,
                            outcome=m.outcome,
                            project=project.slug,
                        )
                except ServiceError as exc:  # e.g. a write gate refusing it: reported, not fatal
                    refused[m.ref] = str(exc)
                    continue
                if result.duplicate:
                    refused[m.ref] = f"identical to {result.memory.id}"
                    continue
                ids[m.ref] = result.memory.id
            for ref, at in dated_placement(ds, timezone.now()).items():
                if ref in ids:
                    Memory.objects.filter(pk=ids[ref]).update(created_at=at, updated_at=at)
    finally:
        del embedder.embed  # back to the class's method
    return Bank(org, project, principal, ids, refused, time.perf_counter() - started)


def run_consolidation(bank: Bank, llm: Any, *, dry: bool) -> Any:
    from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate

    run = consolidation_request(
        principal=bank.principal, project=bank.project, options=run_options_validate(dry_run=dry)
    )
    finished = consolidation_execute(run.id, llm=llm)
    if finished is None:
        raise RuntimeError(f"run {run.id} was not claimed")
    return finished


# --- one embedder ----------------------------------------------------------------------------------------


def run_summary(run: Any) -> dict[str, Any]:
    return {
        "id": run.id,
        "status": run.status,
        "counters": run.counters,
        "options": run.options,
        "warnings": run.warnings,
        "errors": run.errors,
        "phase_durations": run.phase_durations,
        "llm_calls": run.llm_calls,
    }


def mode_run(
    ds: Dataset, kind: str, mode: str, embedder: Any, vectors: dict[str, list[float]], texts: dict[str, str]
) -> dict[str, Any]:
    from memories.models import Memory
    from reasoningbank.ai.llm import NoLLM

    slug = f"{ORG_PREFIX}{kind}-{mode}"
    bank = bank_load(ds, slug, vectors, texts, embedder)
    refused = f", {len(bank.refused)} refused" if bank.refused else ""
    log(f"    {mode}: {len(bank.ids)} memories recorded in {bank.seconds:.1f} s{refused}")

    contents = dict(Memory.objects.filter(pk__in=list(bank.ids.values())).values_list("content", "id"))
    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    judge = LabelJudge(ds, {content: ref_of[mid] for content, mid in contents.items()})
    llm = NoLLM() if mode == "none" else judge
    t0 = time.perf_counter()
    with judge_cap(lifted=mode == "scripted-all") as cap:
        dry_run = run_consolidation(bank, llm, dry=True)
        dry_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        real_run = run_consolidation(bank, llm, dry=False)
        real_seconds = time.perf_counter() - t1
    dry, unread = outcome_from_preview(bank, dry_run.preview or {})
    real = outcome_from_db(bank)
    present = set(bank.ids)
    result = {
        "org": slug,
        "memories": len(bank.ids),
        "refused": bank.refused,
        "judge_cap": cap,
        "load_seconds": round(bank.seconds, 2),
        "dry_run_seconds": round(dry_seconds, 2),
        "run_seconds": round(real_seconds, 2),
        "real": score(ds, real, present),
        "dry_run": score(ds, dry, present),
        "parity": parity(dry, real, dry_run, real_run),
        "preview_keys_unread": unread,
        "judge_asked": {k: dict(v) for k, v in judge.asked.items()} if mode != "none" else None,
        "llm_prompts": dict(judge.prompts) if mode != "none" else None,
        "run": run_summary(real_run),
        "dry_run_record": run_summary(dry_run),
    }
    r = result["real"]
    log(
        f"      real: dup P {fmt(r['duplicate_merge']['precision'])} R {fmt(r['duplicate_merge']['recall'])}, "
        f"clusters {r['cluster_membership']['clusters']}, contradiction links {r['contradiction_link']['links']}, "
        f"supersedes {r['supersession']['links']}, disagreeing merged {r['disagreeing_merged']['contradiction']} "
        f"({real_seconds:.1f} s; dry run {dry_seconds:.1f} s)"
    )
    return result


@contextlib.contextmanager
def embedder_context(kind: str) -> Iterator[None]:
    """The embedder and the consolidation thresholds the product would use with it."""
    from django.conf import settings

    names = (
        "CONSOLIDATION_DUPLICATE_THRESHOLD",
        "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD",
        "CONSOLIDATION_JUDGE_MIN_SIMILARITY",
    )
    before = {name: getattr(settings, name) for name in names}
    calibrated = dict(zip(names, settings.CONSOLIDATION_CALIBRATED_THRESHOLDS[kind], strict=True))
    for name, value in calibrated.items():
        setattr(settings, name, value)
    try:
        with embedder_settings(kind):
            yield
    finally:
        for name, value in before.items():
            setattr(settings, name, value)


def embedder_run(ds: Dataset, kind: str, modes: Sequence[str], similarity_only: bool) -> dict[str, Any]:

    embedder, why = embedder_build(kind)
    if embedder is None:
        log(f"  {kind}: unavailable ({why}); skipped")
        return {"unavailable": why}
    with embedder_context(kind):
        texts = embedded_texts(ds)
        t0 = time.perf_counter()
        refs = list(texts)
        vectors = dict(zip(refs, embedder.embed([texts[r] for r in refs]), strict=True))
        embed_seconds = time.perf_counter() - t0
        log(f"  {kind} ({embedder.name}): {len(refs)} texts embedded in {embed_seconds:.1f} s")
        thresholds = product_thresholds()
        report = similarity_report(ds, {r: np.asarray(v, dtype=float) for r, v in vectors.items()}, thresholds)
        out: dict[str, Any] = {
            "embedding_model": embedder.name,
            "embed_seconds": round(embed_seconds, 2),
            "product_thresholds": thresholds,
            "consolidation_settings": consolidation_settings(),
            "similarity": report,
            "modes": {},
        }
        if similarity_only:
            return out
        for mode in modes:
            out["modes"][mode] = mode_run(ds, kind, mode, embedder, vectors, texts)
    return out


# --- printing --------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_report(report: dict[str, Any]) -> None:
    embedders = {k: v for k, v in report["embedders"].items() if "unavailable" not in v}
    log("\n== Decisions of the real run (pairwise precision / recall) ==")
    log(
        f"{'embedder':<9}{'judge':<14}{'dup P':>7}{'dup R':>7}{'clu P':>7}{'strict':>7}{'clu R':>7}"
        f"{'con P':>7}{'con R':>7}{'sup P':>7}{'sup R':>7}  disagreeing merged (contra: dup+synth / supersession)"
    )
    for kind, e in embedders.items():
        for mode, r in e["modes"].items():
            s = r["real"]
            d = s["disagreeing_merged"]
            log(
                f"{kind:<9}{mode:<14}"
                f"{fmt(s['duplicate_merge']['precision']):>7}{fmt(s['duplicate_merge']['recall']):>7}"
                f"{fmt(s['cluster_membership']['precision']):>7}{fmt(s['cluster_membership']['precision_strict']):>7}"
                f"{fmt(s['cluster_membership']['recall_paraphrase_detail']):>7}"
                f"{fmt(s['contradiction_link']['precision']):>7}{fmt(s['contradiction_link']['recall']):>7}"
                f"{fmt(s['supersession']['precision']):>7}{fmt(s['supersession']['recall']):>7}"
                f"  {d['contradiction']} ({d['contradiction_as_duplicate']}+{d['contradiction_synthesised']}) / "
                f"{d['supersession']}"
            )
    log("(clu R: paraphrase_detail pairs that ended in one memory; strict: cross-item pairs count as wrong)")

    log("\n== Dry run vs real run on identical data ==")
    log(
        f"{'embedder':<9}{'judge':<14}{'proposed: dup archived':>23}{'clusters':>9}{'members':>8}{'wait':>5}"
        f"{'judge':>6}{'contra merged':>14}  |{'done: dup archived':>19}{'clusters':>9}{'members':>8}{'links':>6}"
        f"{'contra merged':>14}  same dups / same clusters"
    )
    for kind, e in embedders.items():
        for mode, r in e["modes"].items():
            p, q = r["parity"]["proposed"], r["parity"]["performed"]
            log(
                f"{kind:<9}{mode:<14}{p['duplicate_archived']:>23}{p['clusters']:>9}{p['cluster_members']:>8}"
                f"{p['clusters_waiting_for_an_llm']:>5}{p['judge_pairs']:>6}"
                f"{r['dry_run']['disagreeing_merged']['contradiction']:>14}  |"
                f"{q['duplicate_archived']:>19}{q['clusters']:>9}{q['cluster_members']:>8}"
                f"{q['contradiction_links'] + q['supersessions']:>6}"
                f"{r['real']['disagreeing_merged']['contradiction']:>14}  "
                f"{'yes' if r['parity']['same_duplicate_merges'] else 'no'} / "
                f"{r['parity']['clusters_identical']} of {max(p['clusters'], q['clusters'])}"
            )
    log(
        "(wait: clusters the dry run lists as waiting for an LLM; judge: pairs it would send to the judge; "
        "links: contradicts + supersedes links made)"
    )

    log("\n== Cosine similarity of the labelled pairs (min / p10 / median / p90 / max) ==")
    for kind, e in report["embedders"].items():
        if "unavailable" in e:
            log(f"{kind}: unavailable — {e['unavailable']}")
            continue
        sim = e["similarity"]
        log(f"{kind} ({e['embedding_model']})")
        for label, st in sim["labels"].items():
            log(
                f"  {label:<18} n={st['n']:>4}  {fmt(st.get('min'))} / {fmt(st.get('p10'))} / "
                f"{fmt(st.get('median'))} / {fmt(st.get('p90'))} / {fmt(st.get('max'))}"
            )
        c = sim["cross_item"]
        log(
            f"  {'cross-item':<18} n={c['n']:>6}  p99 {fmt(c['p99'])}, p99.9 {fmt(c['p999'])}, max {fmt(c['max'])}; "
            f"≥ 0.7: {c['at_or_above_0.7']}, ≥ 0.8: {c['at_or_above_0.8']}"
        )
        cues = ", ".join(f"{cue} {fmt(st['median'])}" for cue, st in sim["contradiction_by_cue"].items())
        log(f"  contradiction median by cue: {cues}")

    log("\n== Thresholds ==")
    log(
        f"{'embedder':<9}{'dup (P≥0.99)':>20}{'dup if cues route':>22}{'cluster (P≥0.99)':>20}"
        f"{'band low 95%/all':>18}{'disagree ≥ high':>16}{'band pairs/1k':>14}"
    )
    for kind, e in embedders.items():
        s = e["similarity"]["suggested"]

        def thr(x: dict[str, Any] | None) -> str:
            return f"{x['threshold']:.3f} (R {fmt(x['recall'], 2)})" if x else "none"

        log(
            f"{kind:<9}{thr(s['duplicate_threshold']):>20}"
            f"{thr(s['duplicate_threshold_if_cues_route_disagreeing_pairs_to_the_judge']):>22}"
            f"{thr(s['cluster_threshold']):>20}"
            f"{fmt(s['contradiction_band_low_95']) + ' / ' + fmt(s['contradiction_band_low_all']):>18}"
            f"{s['disagreeing_pairs_at_or_above_band_high']:>16}{fmt(s['pairs_in_band_95_per_1000_memories'], 1):>14}"
        )
    for kind, e in embedders.items():
        same = e["similarity"]["suggested"]["same_advice_threshold_if_cues_route_and_detail_may_merge"]
        if same:
            log(
                f"{kind}: duplicate + paraphrase_detail vs complementary/unrelated/cross-item separate at "
                f"{same['threshold']:.3f} (P {fmt(same['precision'])}, R {fmt(same['recall'], 2)})"
            )
    for kind, e in embedders.items():
        cur = e["similarity"]["product_thresholds_on_the_set"]
        t = cur["thresholds"]
        log(
            f"{kind}: product thresholds (duplicate {t['duplicate']}, cluster {t['cluster']}, band "
            f"{t['band_low']}–{t['band_high']}): duplicate P {fmt(cur['duplicate_merge']['precision'])} "
            f"R {fmt(cur['duplicate_merge']['recall'])}; disagreeing pairs ≥ duplicate "
            f"{cur['disagreeing_at_or_above_duplicate']}, "
            f"≥ cluster {cur['disagreeing_at_or_above_cluster']}, in band {cur['disagreeing_in_band']}, "
            f"below band (never judged) {cur['disagreeing_below_band_never_judged']}"
        )


# --- main ------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description="Consolidation quality on the labelled set")
    parser.add_argument("--embedders", nargs="+", default=list(DEFAULT_EMBEDDERS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--data", type=Path, default=DATASET)
    parser.add_argument("--sample", type=int, default=1, help="every n-th item only (a quick look)")
    parser.add_argument(
        "--similarity-only", action="store_true", help="cosine distributions and thresholds only, no consolidation runs"
    )
    parser.add_argument("--output", type=Path, default=None, help="results JSON (default bench/results/…)")
    args = parser.parse_args()

    os.environ.setdefault("RB_DATA_DIR", str(DATA_DIR))
    started = time.perf_counter()
    ds = dataset_load(args.data, max(1, args.sample))
    kinds = Counter(item["kind"] for item in ds.items)
    log(
        f"set: {len(ds.items)} items, {len(ds.memories)} memories, {len(ds.pairs)} labelled pairs "
        f"({', '.join(f'{k} {n}' for k, n in kinds.items())})"
    )
    django_setup(migrate=not args.similarity_only)
    log(f"data dir: {os.environ['RB_DATA_DIR']}")
    report: dict[str, Any] = {
        "benchmark": "consolidation_quality",
        "dataset": {
            "path": str(args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data),
            "sha256": ds.sha256,
            "schema_version": SCHEMA_VERSION,
            "items": len(ds.items),
            "memories": len(ds.memories),
            "pairs": dict(Counter(p.label for p in ds.pairs)),
            "sample": args.sample,
        },
        "config": {"embedders": args.embedders, "modes": args.modes, "similarity_only": args.similarity_only},
        "machine": machine_info(),
        "revision": revision(),
        "embedders": {},
    }
    for kind in args.embedders:
        report["embedders"][kind] = embedder_run(
            ds, kind, [] if args.similarity_only else args.modes, args.similarity_only
        )
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.similarity_only:
        for e in report["embedders"].values():
            e.setdefault("modes", {})
    print_report(report)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    path = (
        args.output or RESULTS_DIR / f"consolidation-quality-{date}{'-similarity' if args.similarity_only else ''}.json"
    )
    write_json(path, report)
    log(f"\n{report['seconds']:.0f} s; JSON: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


if __name__ == "__main__":
    main()
