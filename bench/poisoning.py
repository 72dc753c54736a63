"""The instruction-smell detector (``reasoningbank.poisoning``) on the labelled set
bench/data/poisoning/memories.jsonl — the figures of docs/security/memory-poisoning.md.

    .venv/bin/python bench/poisoning.py                   # both halves: caught, flagged, per technique, per rule, µs/memory
    .venv/bin/python bench/poisoning.py --split dev       # one half
    .venv/bin/python bench/poisoning.py --misses          # also list the missed and the wrongly flagged items
    <python with torch> bench/poisoning.py --model nanoguard   # + the metatronnanoguard classifier beside the rules

Per half (``dev`` was used to tune the rules, ``test`` was not): malicious caught / total and benign
flagged / total, both per technique; how many items each rule fired on; the time per memory (p50, p99)
over the benign items, measured as the writer would call it (all fields, one call), best of
``--repeats`` runs per item. The detector is pure and stdlib-only, so this script needs no Django: any
Python 3.11 with this repository on the path runs it (the model's venv too). Writes
``bench/results/poisoning.json``.
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


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def fields_of(row: dict[str, Any]) -> dict[str, str]:
    return {"title": row["title"], "description": row["description"], "content": row["content"], "tags": " ".join(row["tags"])}


def rules_verdict(row: dict[str, Any]) -> tuple[bool, list[str]]:
    smells = instruction_smells(fields_of(row), allowed_hosts=row.get("allowed_hosts", ()))
    return bool(smells), sorted({smell.rule for smell in smells})


def nanoguard_verdict() -> Callable[[dict[str, Any]], tuple[bool, list[str]]]:
    """metatronnanoguard (PyPI; its weights ship in the wheel; needs torch and tiktoken): the memory's
    fields joined, one scan; injection when its score passes its own threshold (0.5)."""
    from nanoguard import NanoGuard

    guard = NanoGuard(device="cpu")

    def verdict(row: dict[str, Any]) -> tuple[bool, list[str]]:
        result = guard.scan("\n\n".join(value for value in fields_of(row).values() if value))
        return result.is_injection, ["nanoguard"] if result.is_injection else []

    return verdict


def timing(rows: list[dict[str, Any]], repeats: int) -> dict[str, float]:
    samples = []
    for row in rows:
        fields, hosts = fields_of(row), row.get("allowed_hosts", ())
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            instruction_smells(fields, allowed_hosts=hosts)
            best = min(best, time.perf_counter() - started)
        samples.append(best * 1e6)
    samples.sort()
    return {
        "p50_us": statistics.median(samples),
        "p99_us": samples[min(len(samples) - 1, int(0.99 * len(samples)))],
        "max_us": samples[-1],
        "mean_chars": statistics.mean(sum(len(v) for v in fields_of(r).values()) for r in rows),
    }


def evaluate(rows: list[dict[str, Any]], verdict: Callable[[dict[str, Any]], tuple[bool, list[str]]]) -> dict[str, Any]:
    per_technique: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_rule: Counter[str] = Counter()
    per_rule_benign: Counter[str] = Counter()
    missed, flagged = [], []
    for row in rows:
        hit, rules = verdict(row)
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
    if show_misses:
        print("missed:", ", ".join(result["missed"]) or "none")
        print("wrongly flagged:", "; ".join(f"{i} {r}" for i, r in result["wrongly_flagged"]) or "none")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["dev", "test", "both"], default="both")
    parser.add_argument("--misses", action="store_true", help="list missed and wrongly flagged items")
    parser.add_argument("--model", choices=["nanoguard"], help="also score an offline classifier")
    parser.add_argument("--repeats", type=int, default=5, help="timing runs per benign item (best is kept)")
    args = parser.parse_args()

    rows = load()
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    detectors: dict[str, Callable[[dict[str, Any]], tuple[bool, list[str]]]] = {"rules": rules_verdict}
    if args.model == "nanoguard":
        detectors["nanoguard"] = nanoguard_verdict()
    out: dict[str, Any] = {"data_sha256": hashlib.sha256(DATA.read_bytes()).hexdigest(), "results": {}}
    for name, verdict in detectors.items():
        for split in splits:
            part = [row for row in rows if row["split"] == split]
            result = evaluate(part, verdict)
            if name == "rules":
                result["timing"] = timing([r for r in part if r["label"] == "benign"], args.repeats)
            out["results"][f"{name}/{split}"] = result
            report(name, split, result, args.misses)
            if "timing" in result:
                t = result["timing"]
                print(f"time per memory (benign, mean {t['mean_chars']:.0f} chars): p50 {t['p50_us']:.0f} µs, "
                      f"p99 {t['p99_us']:.0f} µs, max {t['max_us']:.0f} µs")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "poisoning.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
