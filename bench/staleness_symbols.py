"""How well a commit's reported symbols flag anchors (docs/code-memory.md#staleness): on a real
repository's history with its code, every function and class of every modified Python file is taken as
an anchor; the flag is what the service decides from the git hook's report (the symbols the hunks touch,
``reasoningbank_hooks/code_changes``, and ``memories.code.staleness.symbol_touched``), the truth is
whether the symbol's source text differs between the parent and the commit (or the symbol is gone).

    .venv/bin/python bench/staleness_symbols.py [--repo PATH] [--commits N]

Prints precision (flagged anchors whose code really changed) and recall (changed ones flagged). No
service, no database: the geometry alone."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "integrations" / "claude-code" / "hooks"))
sys.path.insert(0, str(ROOT))

from reasoningbank_hooks import code_changes as cc  # noqa: E402

from memories.code.staleness import symbol_touched  # noqa: E402


def git(repo: str, *args: str) -> str:
    return cc.git_run(*args, cwd=repo)


def segments(source: str, symbols: list[cc.Symbol]) -> dict[str, str]:
    lines = source.splitlines()
    return {s.name: "\n".join(lines[s.start - 1 : s.end]) for s in symbols}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(ROOT), help="a git repository with Python files (default: this one)")
    parser.add_argument("--commits", type=int, default=400, help="the last N first-parent commits touching .py")
    args = parser.parse_args()
    shas = git(args.repo, "log", "--first-parent", "--no-merges", "--format=%H", f"-n{args.commits}", "--", "*.py")
    tp = fp = fn = tn = files = 0
    for sha in shas.split():
        parents = git(args.repo, "show", "-s", "--format=%P", sha).split()
        if not parents:
            continue
        _, _, changes = cc.commit_changes(sha, git=lambda *a: git(args.repo, *a))
        for change in changes:
            if change.status not in ("modified", "renamed") or not change.path.endswith(".py"):
                continue
            try:
                old_source = git(args.repo, "show", f"{parents[0]}:{change.old_path or change.path}")
                new_source = git(args.repo, "show", f"{sha}:{change.path}")
            except subprocess.CalledProcessError:
                continue
            old, new = cc.python_symbols(old_source), cc.python_symbols(new_source)
            if old is None or new is None or change.symbols is None:
                continue
            files += 1
            before, after = segments(old_source, old), segments(new_source, new)
            for name, text in before.items():
                changed = after.get(name) != text
                flagged = symbol_touched(name, change.symbols)
                tp += changed and flagged
                fp += flagged and not changed
                fn += changed and not flagged
                tn += not changed and not flagged
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"{len(shas.split())} commits, {files} modified Python files, {tp + fp + fn + tn} symbol anchors")
    print(f"flagged {tp + fp}: precision {precision:.3f}; really changed {tp + fn}: recall {recall:.3f}")
    print(f"(true positives {tp}, false positives {fp}, false negatives {fn}, true negatives {tn})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
