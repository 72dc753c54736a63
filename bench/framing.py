"""What framing injected memories as data costs, in tokens per injection
(docs/security/memory-poisoning.md#what-the-framing-costs): the session-start block (``memory_context``)
and the per-prompt block (a search with ``inject``, what the agent hooks inject), each holding 1 and 3
memories, built by the product's own code (``memories/context/block.py``, ``memories/trust/framing.py``)
and compared with the same memories in the blocks as they were before the framing (no preamble about
data, no ``<memory>`` element, no source label; reproduced below from the previous code).

The memories are the labelled consolidation set's (``bench/data/consolidation_set.jsonl``: real-length
strategies as agents record them), drawn ``--draws`` times at random for each size; each note carries a
typical source label ("recorded by alice.martin@acme.test via claude-code 2.1 · 2026-11-30") and a real
id's length. Tokens are the service's own estimate (four characters a token), the unit every budget of
the product counts in. Pure Python: no database, no service.

    .venv/bin/python bench/framing.py
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_info, write_json
from memories.context.block import ContextEntry, block_format
from memories.trust.framing import PromptNote, prompt_block_format, tokens_estimate

DATA = Path(__file__).resolve().parent / "data" / "consolidation_set.jsonl"
RESULTS = Path(__file__).resolve().parent / "results"
LABEL = "recorded by alice.martin@acme.test via claude-code 2.1 · 2026-11-30"
START, END, NOW = datetime(2026, 10, 2, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC), datetime.now(UTC)
BUDGET = 20_000  # large enough for every draw: the framing is measured, not the budget

# --- the blocks before the framing (the previous memories/context/block.py and hook) -----------------
OLD_START_HEADER = (
    "<!-- Memory Consolidation Context - Auto-generated, do not edit -->\n"
    "<!-- This block is replaced on each session start -->\n\n"
    "## Project Memory Context\n\n"
    "The following summarizes key decisions, learnings, and context from this project's history:\n"
)
OLD_PROMPT_OPEN = (
    "<reasoningbank_memories>\n"
    "Lessons from this project's ReasoningBank that may help with this request "
    "(rate one with memory_feedback if it helped or misled):\n"
)
OLD_PROMPT_CLOSE = "</reasoningbank_memories>"


def old_start_block(memories: list[dict[str, Any]]) -> str:
    entries = "".join(
        "\n".join([f"\n### {m['title']} ({START:%Y-%m-%d} - {END:%Y-%m-%d})\n", body(m), ""]) for m in memories
    )
    opening = f'<memory_consolidated_summaries version="00000000" generated_at="{NOW:%Y-%m-%dT%H:%M:%SZ}">\n'
    return opening + OLD_START_HEADER + entries.rstrip() + "\n</memory_consolidated_summaries>"


def old_prompt_block(memories: list[dict[str, Any]]) -> str:
    entries = [
        "\n".join([f"## {m['title']} ({memory_id(i)} · confidence 0.80)", m["description"], m["content"]])
        for i, m in enumerate(memories)
    ]
    return OLD_PROMPT_OPEN + "\n\n".join(entries) + "\n" + OLD_PROMPT_CLOSE


# --- now --------------------------------------------------------------------------------------------------


def memory_id(n: int) -> str:
    return f"mem_01jd{n:022d}"  # a real id's length (mem_ and a 26-character ULID)


def body(memory: dict[str, Any]) -> str:
    return f"{memory['description']}\n\n{memory['content']}"


def start_block(memories: list[dict[str, Any]]) -> str:
    entries = [
        ContextEntry(id=memory_id(i), title=m["title"], body=body(m), start=START, end=END, label=LABEL)
        for i, m in enumerate(memories)
    ]
    block = block_format(entries, token_budget=BUDGET, generated_at=NOW)
    assert len(block.entries) == len(memories)
    return block.text


def prompt_block(memories: list[dict[str, Any]]) -> str:
    notes = [
        PromptNote(
            id=memory_id(i), title=m["title"], text=f"{m['description']}\n{m['content']}", confidence=0.8, label=LABEL
        )
        for i, m in enumerate(memories)
    ]
    block = prompt_block_format(notes, token_budget=BUDGET)
    assert len(block.ids) == len(memories)
    return block.text


def own_tokens(memories: list[dict[str, Any]]) -> int:
    """What the memories' own text costs, with no framing at all."""
    return sum(tokens_estimate(f"{m['title']}\n{m['description']}\n{m['content']}") for m in memories)


def measure(memories_pool: list[dict[str, Any]], size: int, draws: int, rng: random.Random) -> dict[str, Any]:
    rows: dict[str, list[int]] = {key: [] for key in ("own", "start", "start_old", "prompt", "prompt_old")}
    for _ in range(draws):
        chosen = rng.sample(memories_pool, size)
        rows["own"].append(own_tokens(chosen))
        rows["start"].append(tokens_estimate(start_block(chosen)))
        rows["start_old"].append(tokens_estimate(old_start_block(chosen)))
        rows["prompt"].append(tokens_estimate(prompt_block(chosen)))
        rows["prompt_old"].append(tokens_estimate(old_prompt_block(chosen)))
    mean = {key: statistics.fmean(values) for key, values in rows.items()}
    return {
        "memories": size,
        "own_text": round(mean["own"], 1),
        **{
            block: {
                "tokens": round(mean[block], 1),
                "framing": round(mean[block] - mean["own"], 1),
                "framing_before": round(mean[f"{block}_old"] - mean["own"], 1),
                "added_by_the_framing": round(mean[block] - mean[f"{block}_old"], 1),
                "share_of_block": round((mean[block] - mean["own"]) / mean[block], 3),
            }
            for block in ("start", "prompt")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="random draws of memories per size")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    pool = [memory for line in DATA.read_text().splitlines() for memory in json.loads(line)["memories"]]
    rng = random.Random(args.seed)
    results = [measure(pool, size, args.draws, rng) for size in (1, 3)]
    print(f"{len(pool)} memories, {args.draws} draws per size; tokens = ceil(characters / 4)\n")
    print("| block | memories | own text | block now | framing now | framing before | added | framing share |")
    print("|---|---|---|---|---|---|---|---|")
    for row in results:
        for block, name in (("start", "session start"), ("prompt", "per prompt")):
            r = row[block]
            print(
                f"| {name} | {row['memories']} | {row['own_text']:.0f} | {r['tokens']:.0f} | {r['framing']:.0f} | "
                f"{r['framing_before']:.0f} | +{r['added_by_the_framing']:.0f} | {r['share_of_block']:.0%} |"
            )
    write_json(
        RESULTS / "framing.json",
        {"machine": machine_info(), "draws": args.draws, "seed": args.seed, "label": LABEL, "results": results},
    )


if __name__ == "__main__":
    main()
