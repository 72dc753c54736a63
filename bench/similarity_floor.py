"""What ``SEARCH_MIN_SIMILARITY`` drops, per embedder, on the LoCoMo development half (no database).

For every question and every turn of its conversation, the cosine between the question and the turn's
text as the product embeds it (bench/_locomo.py ``stored_text``): the share of evidence turns and of the
other turns below each floor. A vector candidate under the floor is dropped unless a keyword matched
(docs/search.md#fusion-one-relevance): a floor should drop many other turns and almost no evidence, and
mean the same for two embedders given the same default.

    .venv/bin/python bench/similarity_floor.py                        # minilm and minilm-onnx
    .venv/bin/python bench/similarity_floor.py --embedders minilm-onnx --floors 0.15 0.2 0.25
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import dataset_load, stored_text
from common import REPO, log

DATA = Path("/work/shared/eval/locomo-dev.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedders", nargs="+", default=["minilm", "minilm-onnx"])
    parser.add_argument("--floors", nargs="+", type=float, default=[0.1, 0.15, 0.2, 0.25, 0.3])
    args = parser.parse_args()
    from reasoningbank.ai.embedders import MiniLMEmbedder

    conversations = dataset_load(args.data)
    log(f"{args.data.name}: {len(conversations)} conversations, {sum(len(c.queries) for c in conversations)} queries")
    print(f"{'embedder':<12} {'floor':>5}  evidence below  other turns below")
    for kind in args.embedders:
        runtime = "onnx" if kind == "minilm-onnx" else "numpy"
        embedder = MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime=runtime, cache_dir=str(REPO / ".data" / "cache"))
        gold_sims: list[float] = []
        other_sims: list[float] = []
        for conv in conversations:
            ids = [t.dia_id for t in conv.turns]
            turns = np.asarray(embedder.embed([stored_text(t, "protocol") for t in conv.turns]))
            questions = np.asarray(embedder.embed([q.question for q in conv.queries]))
            for query, vector in zip(conv.queries, questions, strict=True):
                sims = turns @ vector
                gold = {ids.index(g) for g in query.gold if g in ids}
                gold_sims += [float(sims[i]) for i in gold]
                other_sims += [float(s) for i, s in enumerate(sims) if i not in gold]
        g, o = np.asarray(gold_sims), np.asarray(other_sims)
        for floor in args.floors:
            print(f"{kind:<12} {floor:>5.2f}  {np.mean(g < floor):>14.3f}  {np.mean(o < floor):>17.3f}")
        print(f"{kind:<12} median evidence {np.median(g):.3f}, other {np.median(o):.3f} ({len(g)} / {len(o)} pairs)")


if __name__ == "__main__":
    main()
