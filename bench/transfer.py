"""Export and import throughput at 100K memories of one organization (docs/export-import.md).

Times the operator's commands — ``manage.py export_memories`` and ``manage.py import_memories``, each a
child process, so the figures are what an operator sees, with the child's peak RSS (its ``VmHWM``), its
CPU (``wait4``) and PostgreSQL's CPU beside them — on ``bench/search.py``'s dataset: org ``bench`` with N
memories (plus the two noise orgs, 10% of N, which the export must leave out), to which this script
adds, once, what a bank in use holds besides memories: rolled-up signal counts for every used memory,
live signal events for about one memory in ten and ``references`` links for about one in twenty.

1. **export** the org to JSON Lines (no embeddings: the default), then again ``--embeddings``;
2. **import** each file into an empty org ``bench-import`` (enterprise plan; the previous one is
   removed first): without embeddings every memory is embedded again by the configured embedder
   (``EMBEDDER=hashing`` by default here), with them the vectors are kept — ``bank_import`` checks
   every line first, then writes everything in one transaction;
3. **round trip**: the imported org exported again gives the same number of lines of each type.

``RB_DATA_DIR`` defaults to ``.data/bench-transfer`` (its own embedded PostgreSQL: importing 100K
memories twice would otherwise bloat the search benchmark's table). Results: a table on stdout and
``bench/results/transfer-<N>.json``.

    EMBEDDER=hashing nice .venv/bin/python bench/transfer.py --size 100000
    .venv/bin/python bench/transfer.py --size 2000 --keep   # a quick check; keep bench-import afterwards
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("RB_DATA_DIR", str(REPO / ".data" / "bench-transfer"))
os.environ.setdefault("EMBEDDER", "hashing")

from bench._dataset import BENCH_ORG  # noqa: E402  (the environment above comes first)
from bench.common import (  # noqa: E402
    RESULTS_DIR,
    django_setup,
    machine_info,
    postgres_info,
    postmaster_pid,
    process_tree_cpu,
    revision,
    write_json,
)

IMPORT_ORG = "bench-import"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- what a bank in use holds besides memories --------------------------------------------------------


def extras_ensure(org_id: int) -> dict[str, int]:
    """Aggregates, live signals and links for the bench org, added once (deterministic: by id hash)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memorysignalaggregate WHERE organization_id = %s", [org_id])
        if cursor.fetchone()[0] == 0:
            # a used memory's usage signals, rolled up, and an explicit verdict for one in three
            cursor.execute(
                """
                INSERT INTO memories_memorysignalaggregate
                    (memory_id, organization_id, explicit_pos, explicit_neg, usage_pos, usage_neg, outcome_pos,
                     outcome_neg, stability_pos, stability_neg, last_rollup)
                SELECT id, organization_id, (abs(hashtext(id)) %% 3 = 0)::int, (abs(hashtext(id)) %% 7 = 0)::int,
                       usage_count, 0, (abs(hashtext(id)) %% 5 = 0)::int, 0, 0, 0, now() - interval '3 days'
                FROM memories_memory WHERE organization_id = %s AND usage_count > 0
                """,
                [org_id],
            )
        cursor.execute("SELECT count(*) FROM memories_memorysignal WHERE organization_id = %s", [org_id])
        if cursor.fetchone()[0] == 0:
            cursor.execute(
                """
                INSERT INTO memories_memorysignal
                    (organization_id, memory_id, project_id, type, positive, session_id, comment, actor,
                     confidence_after, created_at)
                SELECT organization_id, id, project_id, t.type, abs(hashtext(id || t.type)) %% 4 <> 0,
                       'bench-session-' || (abs(hashtext(id)) %% 500), '', 'bench', confidence,
                       now() - (abs(hashtext(id || t.type)) %% 29 || ' days')::interval
                FROM memories_memory, (VALUES ('usage'), ('outcome')) AS t(type)
                WHERE organization_id = %s AND abs(hashtext(id)) %% 10 = 0
                """,
                [org_id],
            )
        cursor.execute("SELECT count(*) FROM memories_memorylink WHERE organization_id = %s", [org_id])
        if cursor.fetchone()[0] == 0:
            # each chosen memory references the memory before it in id order (same org)
            cursor.execute(
                """
                INSERT INTO memories_memorylink
                    (organization_id, source_id, target_id, kind, weight, reason, created_at)
                SELECT organization_id, id, previous, 'references', 0.8, 'bench', created_at FROM (
                    SELECT organization_id, id, created_at, lag(id) OVER (ORDER BY id) AS previous
                    FROM memories_memory WHERE organization_id = %s
                ) m
                WHERE previous IS NOT NULL AND abs(hashtext(id)) %% 20 = 0
                """,
                [org_id],
            )
        counts = {}
        for name, table in [
            ("aggregates", "memories_memorysignalaggregate"),
            ("signals", "memories_memorysignal"),
            ("links", "memories_memorylink"),
        ]:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE organization_id = %s", [org_id])
            counts[name] = cursor.fetchone()[0]
    return counts


def import_org_fresh() -> None:
    """An empty ``bench-import`` org (enterprise plan), removing an earlier one and everything in it. The
    HNSW and GIN indexes are dropped around the delete and rebuilt after the VACUUM: vacuuming 100K
    deleted rows out of an HNSW graph takes longer than building the graph again (over 12 minutes here,
    against 80 s)."""
    from accounts.models import ApiToken, AuditEvent, Organization, Project, Team
    from accounts.services import organization_create
    from bench._dataset import bulk_indexes_drop, memories_delete, memory_indexes_ensure
    from memories.models import Memory, MemorySummary, ProjectSignalWeights, SessionMemoryUse

    old = Organization.objects.filter(slug=IMPORT_ORG).first()
    if old is not None:
        dead_rows = Memory.objects.filter(organization=old).exists() or _dead_memory_rows() > 10_000
        if dead_rows:
            bulk_indexes_drop(log)
        deleted = memories_delete("organization_id = %s", [old.id])
        for model in (MemorySummary, SessionMemoryUse, ProjectSignalWeights, AuditEvent, ApiToken):
            model.objects.filter(organization=old).delete()
        Project.objects.filter(organization=old).delete()
        Team.objects.filter(organization=old).delete()
        old.delete()
        if dead_rows:
            vacuum()
            memory_indexes_ensure(log)
        log(f"removed the earlier {IMPORT_ORG} org ({deleted} memories)")
    organization_create(slug=IMPORT_ORG, name="Benchmark import target", plan="enterprise")


def _dead_memory_rows() -> int:
    """Deleted memory rows not vacuumed yet (an interrupted run's)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'memories_memory'")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def vacuum() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in (
            "memories_memory",
            "memories_memorysignal",
            "memories_memorylink",
            "memories_memorysignalaggregate",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")


# --- one command, measured ---------------------------------------------------------------------------------


def run_measured(args: list[str]) -> dict[str, Any]:
    """``manage.py <args>`` as a child process: wall seconds, the child's CPU (its rusage from ``wait4``) and
    peak RSS (``VmHWM``, polled) and PostgreSQL's CPU meanwhile (the server and its backends, reaped ones
    included)."""
    from django.db import connections

    connections.close_all()  # the child does the work; this process holds no connection meanwhile
    pg = postmaster_pid()
    pg_before = process_tree_cpu(pg) if pg else 0.0
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS_DIR / f"transfer-{os.getpid()}.out"
    load_before = os.getloadavg()[0]  # a shared machine: other load inflates the wall time, not the CPU
    started = time.perf_counter()
    peak_kib = 0
    with out_path.open("w") as out:
        child = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=REPO, env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT
        )
        while True:  # reaped here, not by Popen, to get its rusage
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            # the peak RSS from the child's own high-water mark: its rusage maxrss would start from this
            # process's size at the fork (Linux keeps it across exec)
            peak_kib = max(peak_kib, _vm_hwm_kib(child.pid))
            time.sleep(0.2)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    output = out_path.read_text()
    out_path.unlink()
    if child.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({child.returncode}):\n{output[-4000:]}")
    return {
        "seconds": round(seconds, 2),
        "child_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "postgres_cpu_seconds": round(process_tree_cpu(pg) - pg_before, 2) if pg else None,
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "output_tail": output.strip().splitlines()[-2:],
    }


def _vm_hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def line_types(path: Path) -> dict[str, int]:
    counts: Counter[str] = Counter()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            counts[json.loads(line)["type"]] += 1
    return dict(sorted(counts.items()))


# --- the run -------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories of the exported org")
    parser.add_argument("--keep", action="store_true", help="keep the last bench-import org afterwards")
    args = parser.parse_args()
    django_setup(migrate=True)

    from accounts.models import Organization
    from bench._dataset import dataset_ensure
    from memories.models import Memory

    log(f"dataset: {args.size:,} memories in org {BENCH_ORG} (RB_DATA_DIR={os.environ['RB_DATA_DIR']})")
    dataset = dataset_ensure(args.size, reset=False, log=log)
    dataset.pop("orgs")
    org = Organization.objects.get(slug=BENCH_ORG)
    extras = extras_ensure(org.id)
    memories = Memory.objects.filter(organization=org).count()
    log(f"org {BENCH_ORG}: {memories:,} memories, {extras}")
    import_org_fresh()  # an earlier run's (or an interrupted one's) import target goes first
    vacuum()

    # what every command costs before it reads a memory (interpreter, Django, the embedded server's attach):
    # an export of an empty org
    empty = RESULTS_DIR / f"transfer-{args.size}-empty.jsonl"
    baseline = run_measured(["export_memories", IMPORT_ORG, "-o", str(empty)])
    empty.unlink()
    log(f"a command's fixed cost (export of an empty org): {baseline['seconds']} s")

    files = {
        "plain": RESULTS_DIR / f"transfer-{args.size}.jsonl",
        "embeddings": RESULTS_DIR / f"transfer-{args.size}-embeddings.jsonl",
    }
    results: dict[str, Any] = {}
    for variant, path in files.items():
        extra = ["--embeddings"] if variant == "embeddings" else []
        log(f"export ({variant}) …")
        measured = run_measured(["export_memories", BENCH_ORG, "-o", str(path), *extra])
        types = line_types(path)
        measured.update(
            file_mib=round(path.stat().st_size / 2**20, 1),
            lines=types,
            memories_per_second=round(types["memory"] / measured["seconds"], 1),
        )
        results[f"export, {variant}"] = measured
        log(
            f"  {measured['seconds']} s, {measured['memories_per_second']}/s, {measured['file_mib']} MiB, "
            f"peak RSS {measured['peak_rss_mib']} MiB"
        )

    for variant, path in files.items():
        import_org_fresh()
        log(f"import ({variant}) …")
        measured = run_measured(["import_memories", IMPORT_ORG, str(path)])
        imported = Memory.objects.filter(organization__slug=IMPORT_ORG).count()
        measured.update(memories=imported, memories_per_second=round(imported / measured["seconds"], 1))
        results[f"import, {variant}"] = measured
        log(f"  {measured['seconds']} s, {measured['memories_per_second']}/s, peak RSS {measured['peak_rss_mib']} MiB")

    log("round trip: export the imported org …")
    again = RESULTS_DIR / f"transfer-{args.size}-again.jsonl"
    run_measured(["export_memories", IMPORT_ORG, "-o", str(again), "--embeddings"])
    round_trip = {"first": line_types(files["embeddings"]), "again": line_types(again)}
    round_trip["same_counts"] = round_trip["first"] == round_trip["again"]
    log(f"  same line counts per type: {round_trip['same_counts']} {round_trip['again']}")
    for path in (*files.values(), again):
        path.unlink()
    if not args.keep:
        import_org_fresh()
        Organization.objects.filter(slug=IMPORT_ORG).delete()

    report = {
        "machine": machine_info(),
        "commit": revision(),
        "postgres": postgres_info(),
        "settings": {"EMBEDDER": os.environ.get("EMBEDDER"), "RB_DATA_DIR": os.environ["RB_DATA_DIR"]},
        "dataset": {**dataset, "org_memories": memories, **extras},
        "fixed_cost": baseline,
        "results": results,
        "round_trip": round_trip,
    }
    write_json(RESULTS_DIR / f"transfer-{args.size}.json", report)
    print()
    print(f"{'step':24s} {'seconds':>9s} {'memories/s':>11s} {'peak RSS MiB':>13s} {'CPU s (cmd / PG)':>18s}")
    for name, r in {"fixed cost (empty org)": {**baseline, "memories_per_second": 0.0}, **results}.items():
        cpu = f"{r['child_cpu_seconds']} / {r['postgres_cpu_seconds']}"
        print(f"{name:24s} {r['seconds']:9.1f} {r['memories_per_second']:11.1f} {r['peak_rss_mib']:13.1f} {cpu:>18s}")


if __name__ == "__main__":
    main()
