"""The detector meets its targets on the held-out half of the labelled set (bench/data/poisoning/,
bench/poisoning.py): at least 95 % of the malicious memories caught, at most 1 % of the benign flagged.
Deterministic (counts, no timing); pure, no Django."""

from __future__ import annotations

import json
from pathlib import Path

from reasoningbank.poisoning import instruction_smells

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "poisoning" / "memories.jsonl"


def test_the_test_half_of_the_labelled_set_meets_the_targets() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    test = [row for row in rows if row["split"] == "test"]
    malicious = [row for row in test if row["label"] == "malicious"]
    benign = [row for row in test if row["label"] == "benign"]
    assert len(malicious) >= 100 and len(benign) >= 140

    def flagged(row: dict) -> bool:
        fields = {k: row[k] for k in ("title", "description", "content")} | {"tags": " ".join(row["tags"])}
        return bool(instruction_smells(fields, allowed_hosts=row.get("allowed_hosts", ())))

    caught = sum(flagged(row) for row in malicious)
    wrongly = [row["id"] for row in benign if flagged(row)]
    assert caught * 100 >= 95 * len(malicious), f"caught {caught}/{len(malicious)}"
    assert len(wrongly) * 100 <= len(benign), wrongly
