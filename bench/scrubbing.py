"""Secret scrubbing: our hand-written rules (``reasoningbank.scrubbing``) against the detect-secrets
library (``bc-detect-secrets``, the maintained fork), on the format table of
``tests/reasoningbank/secret_table.py`` — the figures of docs/security/secret-scrubbing.md.

    .venv/bin/pip install -e '.[secrets-bench]'        # the library: an optional extra, not a dependency
    .venv/bin/python bench/scrubbing.py                # the table's scores and the speed on an 8 MB trace
    .venv/bin/python bench/scrubbing.py --mb 2         # a smaller trace
    .venv/bin/python bench/scrubbing.py --also main    # + our scrubber as it is at a git revision
    .venv/bin/python bench/scrubbing.py --mb 2.5 --jsonl --ours-only --also main   # a transcript's shape, ours only

For each scrubber:

* **secrets caught**: table rows whose secret is gone from the scrubbed text (for the library: every
  value it reports is replaced in its line, the way a redactor built on it would). "Found" counts
  rows with any finding at all, whether the redaction then removed the whole secret or not.
* **look-alikes kept**: look-alike rows that come through unchanged (no finding).
* **exact**: rows scrubbed to exactly ``before + marker + after`` (ours only: the library has no markers).
* **ms per MB** (best of ``--repeats``, the scrubbers taking turns): a synthetic trace
  (``bench/_traces.py``: code, shell output, diffs, test runs) with one table row every ~8 KB, scrubbed
  whole; the library scans it as a file (its designed use: per line).
  With ``--jsonl`` the trace is a transcript's JSON lines (each ~8 KB part one JSON-encoded record, as
  Claude Code writes them), which is what a session submit usually scrubs.

Configurations of the library: ``default`` (every plugin and filter of ``default_settings()``, as
``detect-secrets scan`` runs), ``no-entropy`` (without the two high-entropy-string plugins, its
precision setting), and ``combined`` (ours, then the library's default on what is left).
Writes ``bench/results/scrubbing.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._traces import make_trace
from reasoningbank.scrubbing import scrub_secrets
from tests.reasoningbank.secret_table import LOOK_ALIKES, SECRETS

RESULTS = Path(__file__).resolve().parent / "results"
Scrubber = Callable[[str], str]


def ours(text: str) -> str:
    return scrub_secrets(text).text


def scrubber_at(revision: str) -> Scrubber:
    """``scrub_secrets`` of ``reasoningbank/scrubbing`` as it is at a git revision (it is pure): the
    package (or, at older revisions, the single module) loaded under another name beside ours."""
    name = "scrubbing_at_" + "".join(c if c.isalnum() else "_" for c in revision)
    folder = Path(tempfile.mkdtemp())

    def show(path: str) -> str:
        source = subprocess.run(["git", "show", f"{revision}:{path}"], capture_output=True, text=True, check=True)
        return source.stdout.replace("reasoningbank.scrubbing", name)

    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", revision, "reasoningbank/scrubbing/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if listing:
        (folder / name).mkdir()
        for path in listing:
            if path.endswith(".py"):
                (folder / name / Path(path).name).write_text(show(path))
    else:
        (folder / f"{name}.py").write_text(show("reasoningbank/scrubbing.py"))
    sys.path.insert(0, str(folder))
    module = importlib.import_module(name)
    return lambda text: module.scrub_secrets(text).text


def detect_secrets_scrubber(disabled: tuple[str, ...] = ()) -> Scrubber:
    """A redactor on the library: the text as a file, each reported value replaced in its line."""
    from detect_secrets.core import scan
    from detect_secrets.settings import default_settings, get_settings

    def scrub(text: str) -> str:
        with default_settings(), tempfile.TemporaryDirectory() as folder:
            if disabled:
                get_settings().disable_plugins(*disabled)
            path = Path(folder) / "trace.txt"
            path.write_text(text)
            found = list(scan.scan_file(str(path)))
        lines = text.split("\n")
        for secret in found:
            index = secret.line_number - 1
            if secret.secret_value and 0 <= index < len(lines):
                lines[index] = lines[index].replace(secret.secret_value, "[REDACTED:detect-secrets]")
        return "\n".join(lines)

    return scrub


def score(scrub: Scrubber, *, exact: bool) -> dict[str, Any]:
    caught, found, exact_rows, missed = 0, 0, 0, []
    for row in SECRETS:
        out = scrub(row.text)
        found += out != row.text
        if row.secret not in out:
            caught += 1
        else:
            missed.append(row.name)
        exact_rows += exact and out == row.expected
    kept, flagged = 0, []
    for row in LOOK_ALIKES:
        if scrub(row.text) == row.text:
            kept += 1
        else:
            flagged.append(row.name)
    return {
        "secrets": len(SECRETS),
        "caught": caught,
        "found": found,
        "exact": exact_rows if exact else None,
        "look_alikes": len(LOOK_ALIKES),
        "kept": kept,
        "missed": missed,
        "flagged": flagged,
    }


def big_trace(megabytes: float, *, jsonl: bool = False) -> str:
    rng = random.Random(7)
    parts: list[str] = []
    size = 0
    rows = [*SECRETS, *LOOK_ALIKES]
    while size < megabytes * 1_000_000:
        trace = make_trace(rng, topic=rng.randrange(50), target_bytes=8_000)
        trace += "\n" + rng.choice(rows).text + "\n"
        if jsonl:
            trace = json.dumps({"type": "user", "message": {"role": "user", "content": trace}}) + "\n"
        parts.append(trace)
        size += len(trace)
    return "".join(parts)


def speeds(scrubbers: dict[str, Scrubber], text: str, repeats: int) -> dict[str, float]:
    """ms per MB of each scrubber, best of ``repeats``, the scrubbers taking turns within each round so
    that a shared machine's load falls on all of them alike."""
    best = dict.fromkeys(scrubbers, float("inf"))
    for _ in range(repeats):
        for name, scrub in scrubbers.items():
            started = time.perf_counter()
            scrub(text)
            best[name] = min(best[name], time.perf_counter() - started)
    megabytes = len(text.encode()) / 1_000_000
    return {name: seconds * 1000 / megabytes for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=8.0, help="size of the speed test's trace (MB)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--also", metavar="REVISION", help="also score our scrubber as it is at this git revision")
    parser.add_argument("--jsonl", action="store_true", help="time a transcript's JSON lines instead of plain text")
    parser.add_argument("--ours-only", action="store_true", help="without the detect-secrets library")
    args = parser.parse_args()

    configurations: dict[str, tuple[Scrubber, bool]] = {
        "ours": (ours, True),
        **({f"ours at {args.also}": (scrubber_at(args.also), True)} if args.also else {}),
    }
    if not args.ours_only:
        library = detect_secrets_scrubber()
        entropy_off = detect_secrets_scrubber(("Base64HighEntropyString", "HexHighEntropyString"))
        configurations |= {
            "detect-secrets (default)": (library, False),
            "detect-secrets (no-entropy)": (entropy_off, False),
            "combined (ours + default)": (lambda text: library(ours(text)), False),
        }
    trace = big_trace(args.mb, jsonl=args.jsonl)
    results: dict[str, Any] = {
        "trace_mb": round(len(trace.encode()) / 1_000_000, 2),
        "jsonl": args.jsonl,
        "configurations": {},
    }
    print(f"{len(SECRETS)} secret formats, {len(LOOK_ALIKES)} look-alikes, a {results['trace_mb']} MB trace")
    print(f"{'scrubber':30} {'caught':>8} {'found':>7} {'exact':>7} {'kept':>7} {'ms/MB':>9}")
    timed = speeds({name: scrub for name, (scrub, _) in configurations.items()}, trace, args.repeats)
    for name, (scrub, exact) in configurations.items():
        figures = score(scrub, exact=exact)
        figures["ms_per_mb"] = round(timed[name], 1)
        results["configurations"][name] = figures
        print(
            f"{name:30} {figures['caught']:>4}/{figures['secrets']:<3} {figures['found']:>7} "
            f"{figures['exact'] if figures['exact'] is not None else '-':>7} "
            f"{figures['kept']:>3}/{figures['look_alikes']:<3} {figures['ms_per_mb']:>9}"
        )
    for name, figures in results["configurations"].items():
        if figures["missed"]:
            print(f"\n{name} missed: {', '.join(figures['missed'])}")
        if figures["flagged"]:
            print(f"{name} flagged look-alikes: {', '.join(figures['flagged'])}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scrubbing.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
