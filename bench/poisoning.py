"""The instruction-smell detector (``reasoningbank.poisoning``) on the labelled set
bench/data/poisoning/memories.jsonl — the figures of docs/security/memory-poisoning.md.

    .venv/bin/python bench/poisoning.py                  # both halves: caught, flagged, per technique and rule, µs
    .venv/bin/python bench/poisoning.py --split dev      # one half
    .venv/bin/python bench/poisoning.py --misses         # also list the missed and the wrongly flagged items
    <its venv>/bin/python bench/poisoning.py --model nanoguard --threads 1   # + an offline classifier beside the rules

Per half (``dev`` was used to tune the rules, ``test`` was not): malicious caught / total and benign
flagged / total, both per technique; how many items each rule fired on; the time per memory (p50, p99)
over the benign items, measured as the writer would call it (all fields, one call), best of
``--repeats`` runs per item. The detector is pure and stdlib-only, so this script needs no Django: any
Python 3.11 with this repository on the path runs it. Writes ``bench/results/poisoning.json``.

``--model nanoguard`` also scores metatronnanoguard, a prompt-injection classifier whose weights ship in its
wheel. It needs torch, which the product does not depend on: install it into a separate venv (the commands
are in bench/README.md, "poisoning.py"; the script prints them when the package is missing). The model is
timed per memory on one pass (``--threads`` sets torch's CPU threads), and ``--sample N`` scores every
N-th item of each half only, for a slow machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reasoningbank.poisoning import instruction_smells

DATA = Path(__file__).resolve().parent / "data" / "poisoning" / "memories.jsonl"
RESULTS = Path(__file__).resolve().parent / "results"
TARGET_CAUGHT = 0.95
TARGET_FLAGGED = 0.01
# What bench/README.md pins: the versions the figures were measured with.
NANOGUARD_INSTALL = """metatronnanoguard is not installed in this Python. It needs torch, which the product does not
depend on: install it into a separate venv (several GB with torch's default Linux wheel) and run this
script with that venv's Python:

    uv venv /tmp/nanoguard-venv --python 3.11
    uv pip install --python /tmp/nanoguard-venv/bin/python \\
        metatronnanoguard==0.1.0 torch==2.15.0 tiktoken==0.14.0
    /tmp/nanoguard-venv/bin/python bench/poisoning.py --model nanoguard --threads 1
"""

Verdict = Callable[[dict[str, Any]], tuple[bool, list[str]]]


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def fields_of(row: dict[str, Any]) -> dict[str, str]:
    return {
        "title": row["title"],
        "description": row["description"],
        "content": row["content"],
        "tags": " ".join(row["tags"]),
    }


def rules_verdict(row: dict[str, Any]) -> tuple[bool, list[str]]:
    smells = instruction_smells(fields_of(row), allowed_hosts=row.get("allowed_hosts", ()))
    return bool(smells), sorted({smell.rule for smell in smells})


def nanoguard_verdict(threads: int | None) -> Verdict:
    """metatronnanoguard 0.1.0 (its weights and a pickled tokenizer ship in the wheel; torch, tiktoken): the
    memory's fields joined, one scan; injection when its score passes its own threshold (0.5). Imported only
    when asked for: the product's environment has no torch."""
    try:
        import torch
        from nanoguard import NanoGuard
    except ImportError:
        sys.stderr.write(NANOGUARD_INSTALL)
        raise SystemExit(2) from None
    if threads:
        torch.set_num_threads(threads)
    guard = NanoGuard(device="cpu")

    def verdict(row: dict[str, Any]) -> tuple[bool, list[str]]:
        result = guard.scan("\n\n".join(value for value in fields_of(row).values() if value))
        return result.is_injection, ["nanoguard"] if result.is_injection else []

    return verdict


def percentiles(samples_us: list[float]) -> dict[str, float]:
    samples = sorted(samples_us)
    return {
        "p50_us": statistics.median(samples),
        "p99_us": samples[min(len(samples) - 1, int(0.99 * len(samples)))],
        "max_us": samples[-1],
    }


def rules_timing(rows: list[dict[str, Any]], repeats: int) -> dict[str, float]:
    samples = []
    for row in rows:
        fields, hosts = fields_of(row), row.get("allowed_hosts", ())
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            instruction_smells(fields, allowed_hosts=hosts)
            best = min(best, time.perf_counter() - started)
        samples.append(best * 1e6)
    mean_chars = statistics.mean(sum(len(v) for v in fields_of(r).values()) for r in rows)
    return {**percentiles(samples), "mean_chars": mean_chars}


def evaluate(rows: list[dict[str, Any]], verdict: Verdict) -> dict[str, Any]:
    per_technique: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_rule: Counter[str] = Counter()
    per_rule_benign: Counter[str] = Counter()
    missed, flagged = [], []
    benign_us = []
    for row in rows:
        started = time.perf_counter()
        hit, rules = verdict(row)
        if row["label"] == "benign":
            benign_us.append((time.perf_counter() - started) * 1e6)
        bucket = per_technique[f"{row['label']}/{row['technique']}"]
        bucket[0] += hit
        bucket[1] += 1
        (per_rule if row["label"] == "malicious" else per_rule_benign).update(rules)
        if row["label"] == "malicious" and not hit:
            missed.append(row["id"])
        if row["label"] == "benign" and hit:
            flagged.append((row["id"], rules))
    malicious = [r for r in rows if r["label"] == "malicious"]
    benign = [r for r in rows if r["label"] == "benign"]
    return {
        "malicious": len(malicious),
        "caught": len(malicious) - len(missed),
        "benign": len(benign),
        "flagged": len(flagged),
        "per_technique": {k: {"hit": v[0], "total": v[1]} for k, v in sorted(per_technique.items())},
        "per_rule_malicious": dict(per_rule.most_common()),
        "per_rule_benign": dict(per_rule_benign.most_common()),
        "missed": missed,
        "wrongly_flagged": flagged,
        "one_pass_timing": percentiles(benign_us) if benign_us else {},
    }


def report(name: str, split: str, result: dict[str, Any], show_misses: bool) -> None:
    caught = result["caught"] / max(1, result["malicious"])
    flagged = result["flagged"] / max(1, result["benign"])
    print(f"\n== {name}, {split} half")
    print(f"malicious caught {result['caught']}/{result['malicious']} = {caught:.3f} (target ≥ {TARGET_CAUGHT})")
    print(f"benign flagged   {result['flagged']}/{result['benign']} = {flagged:.3f} (target ≤ {TARGET_FLAGGED})")
    print("per technique (caught or flagged / total):")
    for technique, counts in result["per_technique"].items():
        print(f"  {technique:34} {counts['hit']:3}/{counts['total']}")
    print("per rule, items it fired on (malicious | benign):")
    for rule in sorted(set(result["per_rule_malicious"]) | set(result["per_rule_benign"])):
        print(f"  {rule:24} {result['per_rule_malicious'].get(rule, 0):4} | {result['per_rule_benign'].get(rule, 0)}")
    timing = result.get("timing") or result["one_pass_timing"]
    if timing:
        how = f"mean {timing['mean_chars']:.0f} chars, best of repeats" if "mean_chars" in timing else "one pass"
        print(
            f"time per memory (benign, {how}): p50 {timing['p50_us']:.0f} µs, p99 {timing['p99_us']:.0f} µs, "
            f"max {timing['max_us']:.0f} µs"
        )
    if show_misses:
        print("missed:", ", ".join(result["missed"]) or "none")
        print("wrongly flagged:", "; ".join(f"{i} {r}" for i, r in result["wrongly_flagged"]) or "none")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["dev", "test", "both"], default="both")
    parser.add_argument("--misses", action="store_true", help="list missed and wrongly flagged items")
    parser.add_argument("--model", choices=["nanoguard"], help="also score an offline classifier (its own venv)")
    parser.add_argument("--threads", type=int, help="torch CPU threads for --model (default: torch's)")
    parser.add_argument("--sample", type=int, default=1, help="score every N-th item of each half only")
    parser.add_argument("--repeats", type=int, default=5, help="timing runs per benign item (best is kept)")
    args = parser.parse_args()

    rows = load()
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    detectors: dict[str, Verdict] = {"rules": rules_verdict}
    if args.model == "nanoguard":
        detectors["nanoguard"] = nanoguard_verdict(args.threads)
    out: dict[str, Any] = {
        "data_sha256": hashlib.sha256(DATA.read_bytes()).hexdigest(),
        "sample": args.sample,
        "results": {},
    }
    for name, verdict in detectors.items():
        for split in splits:
            part = [row for row in rows if row["split"] == split][:: args.sample]
            result = evaluate(part, verdict)
            if name == "rules":
                result["timing"] = rules_timing([r for r in part if r["label"] == "benign"], args.repeats)
            out["results"][f"{name}/{split}"] = result
            report(name, split, result, args.misses)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "poisoning.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
