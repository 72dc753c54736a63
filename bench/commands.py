"""How long a ``manage.py`` command takes from the shell: ``help``, ``check`` and ``create_org`` (then
``create_project``), each run as its own process the way a person types it (docs/commands.md).

    .venv/bin/python bench/commands.py                 # 10 runs of each, the figures in bench/README.md
    .venv/bin/python bench/commands.py --runs 20
    .venv/bin/python bench/commands.py --importtime    # + the slowest imports of one `manage.py help`
    git archive main | tar -x -C /tmp/before && .venv/bin/python bench/commands.py --also /tmp/before
                                                       # + the same commands of another checkout, interleaved

Runs against the bench database (``RB_DATA_DIR=<repo>/.data/bench``, migrated first). This process
stays attached to the embedded PostgreSQL meanwhile, as the running service would: without it every
command would start and stop the server, which is not what a command costs beside a running service.

For each command: wall time p50/p99 (what a person waits for, disturbed by other load on the machine)
and the CPU seconds of the command's process p50 (user + system, steadier under load). ``help``
does nothing but start up, so its figure is the start-up overhead every command pays; a ``create_*``
command adds a handful of INSERTs. Writes ``bench/results/commands.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, RESULTS_DIR, Latency, django_setup, log, machine_info, revision, write_json


def command_time(argv: list[str], tree: Path = REPO) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one ``manage.py`` run in ``tree``; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=tree, env=dict(os.environ), capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def slowest_imports(top: int = 15) -> list[tuple[float, str]]:
    """The top-level imports of one ``manage.py help`` by cumulative time (``python -X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "manage.py", "help"],
        cwd=REPO,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line[len("import time:") :].split("|")
        if name.startswith(" ") and not name.startswith("  "):  # imported by the program itself, not a module
            rows.append((int(cumulative) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument(
        "--also",
        type=Path,
        default=None,
        help="another checkout of the repository (same .venv, same bench database): each run of a command "
        "here is followed by one there, so both see the same load",
    )
    args = parser.parse_args()
    trees = {"this checkout": REPO, **({str(args.also): args.also.resolve()} if args.also else {})}

    django_setup(migrate=True)  # also keeps the embedded server up while the commands run
    load_before = os.getloadavg()
    run_id = f"{os.getpid()}x{int(time.time())}"
    series: dict[str, Callable[[int, int], list[str]]] = {
        "help": lambda t, i: ["help"],
        "check": lambda t, i: ["check"],
        "create_org": lambda t, i: ["create_org", f"bench-cmd-{run_id}-{t}-{i}"],
        "create_project": lambda t, i: ["create_project", f"bench-cmd-{run_id}-{t}-{i}", "web-app"],
    }
    for tree in trees.values():  # one warm-up run of help: the first run after an install compiles .pyc files
        command_time(["help"], tree)
    results: dict[str, dict[str, dict[str, object]]] = {label: {} for label in trees}
    for name, argv_of in series.items():
        walls: dict[str, list[float]] = {label: [] for label in trees}
        cpus: dict[str, list[float]] = {label: [] for label in trees}
        for i in range(args.runs):
            for t, (label, tree) in enumerate(trees.items()):
                wall, cpu = command_time(argv_of(t, i), tree)
                walls[label].append(wall * 1000)
                cpus[label].append(cpu * 1000)
        for label in trees:
            wall_stats, cpu_stats = Latency.of(walls[label]), Latency.of(cpus[label])
            results[label][name] = {"wall_ms": wall_stats.as_dict(), "cpu_ms": cpu_stats.as_dict()}
            log(
                f"manage.py {name:<15} wall p50 {wall_stats.p50 / 1000:5.2f} s  p99 {wall_stats.p99 / 1000:5.2f} s"
                f"   CPU p50 {cpu_stats.p50 / 1000:5.2f} s   ({args.runs} runs, {label})"
            )
    load_after = os.getloadavg()
    log(f"load average {load_before[0]:.1f} before → {load_after[0]:.1f} after; {os.cpu_count()} CPUs")
    imports = slowest_imports() if args.importtime else []
    for seconds, module in imports:
        log(f"  import {module:<45} {seconds:6.3f} s")

    from django.db import transaction

    from accounts.models import Organization

    with transaction.atomic():  # the bench's orgs go again, so runs compare
        Organization.objects.filter(slug__startswith=f"bench-cmd-{run_id}-").delete()
    write_json(
        RESULTS_DIR / "commands.json",
        {
            "machine": machine_info(),
            "revision": revision(),
            "load_average": {"before": load_before, "after": load_after},
            "runs": args.runs,
            "trees": {label: str(tree) for label, tree in trees.items()},
            "commands": results,
            "slowest_imports": imports,
        },
    )


if __name__ == "__main__":
    main()
