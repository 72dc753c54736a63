"""The bench's data set in the database: org ``bench`` (teams, ten projects) with exactly N memories of
the synthetic corpus (``_corpus.py``) and two noise orgs with 5% of N each, generated and embedded by the
configured embedder in worker processes (one per core) and bulk-inserted; ids are deterministic, so a
larger N tops up and a smaller one drops the tail; memories another embedder made are loaded again
(bench/README.md, ``search.py``)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from _corpus import Corpus

PROJECT_STACKS = [  # (slug, team index or None, preferred languages/frameworks)
    ("web-app", 0, ["TypeScript", "React", "Next.js"]),
    ("api-gateway", 0, ["Go", "Envoy", "Gin"]),
    ("billing", 0, ["Java", "Spring Boot", "PostgreSQL"]),
    ("mobile", 0, ["Swift", "Kotlin"]),
    ("data-pipeline", 1, ["Python", "Kafka", "ClickHouse"]),
    ("ml-platform", 1, ["Python", "FastAPI", "Kubernetes"]),
    ("search", 1, ["Rust", "Elasticsearch", "Actix"]),
    ("infra", 1, ["Terraform", "Kubernetes", "Helm"]),
    ("admin-portal", None, ["Ruby", "Rails", "PostgreSQL"]),
    ("notifications", None, ["Elixir", "Phoenix", "Redis"]),
]
TEAM_SLUGS = ["product", "platform"]
NOISE_ORGS = ["bench-noise-1", "bench-noise-2"]
BENCH_ORG = "bench"

LOAD_BATCH = 2000
# memory ids are deterministic so that a dataset can grow (top up) or shrink (drop the tail)
ID_PREFIX = {BENCH_ORG: "mem_bench_", NOISE_ORGS[0]: "mem_noise1_", NOISE_ORGS[1]: "mem_noise2_"}
ORG_SEED = {BENCH_ORG: 0, NOISE_ORGS[0]: 1, NOISE_ORGS[1]: 2}
NOISE_FRACTION = 0.05  # per noise org: two of them make 10% of N
# indexes dropped during a large load and rebuilt afterwards (much faster than row-by-row inserts)
BULK_INDEXES = ("memory_embedding_hnsw", "memory_search_gin")
DAY = 86400.0
# Embedded chunks kept between loads (git-ignored): a reset, a shrink and a top-up, or going back to an
# embedder measured before, reads the vectors instead of embedding 100K texts again (minutes per load).
# Not shared with the bench database: a fresh RB_DATA_DIR still finds them.
VECTOR_CACHE_DIR = Path(
    os.environ.get("BENCH_VECTOR_CACHE", Path(__file__).resolve().parent.parent / ".data" / "bench-vectors")
)


def memory_id(org_slug: str, i: int) -> str:
    return f"{ID_PREFIX[org_slug]}{i:08d}"


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in vector) + "]"


_WORKER_CORPUS: dict[int, Corpus] = {}


def _worker_init(embedder_settings: dict[str, Any]) -> None:
    """A loader worker (a fresh interpreter: ``spawn``; a forked copy of the parent's ONNX Runtime
    session or BLAS pool is not safe to use) builds the configured embedder itself. It configures only
    the embedder's settings: the full settings would attach it to the embedded PostgreSQL, whose
    process list is a file that concurrent starts and exits can corrupt."""
    from django.conf import settings

    settings.configure(**embedder_settings)


def _generate_chunk(args: tuple[int, int, int, list[list[str]], float]) -> tuple[list[dict[str, Any]], float]:
    """Rows for memories ``start..stop`` of one org, embedded by the configured embedder (runs in a
    worker process), and the seconds the embedding took."""
    import random

    from reasoningbank.ai.embedders import embedder_from_settings

    seed, start, stop, stacks, now = args
    corpus = _WORKER_CORPUS.setdefault(seed, Corpus(seed))
    rows: list[dict[str, Any]] = []
    for i in range(start, stop):
        rng = random.Random((seed << 40) + i * 15485863 + 11)
        r = rng.random()
        if r < 0.8:
            place = ("project", rng.randrange(len(stacks)))
        elif r < 0.9:
            place = ("team", rng.randrange(2))
        else:
            place = ("org", None)
        stack = stacks[place[1]] if place[0] == "project" else []
        text = corpus.text(i, stack)
        origin_r = rng.random()
        origin, initial = (
            ("recorded", 0.8)
            if origin_r < 0.7
            else (
                ("distilled", 0.7 if text.outcome == "success" else 0.6) if origin_r < 0.95 else ("consolidated", 0.8)
            )
        )
        confidence = rng.uniform(0.5, 0.95) if rng.random() < 0.9 else rng.uniform(0.2, 0.5)
        usage = min(int(rng.paretovariate(1.5)) - 1, 200)
        evidence = usage / 2 + rng.uniform(0, 10)
        total = 2.0 + evidence  # prior strength 2 (memories.confidence.bayes.DEFAULT_PRIOR_STRENGTH) + evidence
        age_days = rng.uniform(0, 365)
        created = now - age_days * DAY
        last_used = created + rng.random() * (now - created) if usage else None
        archived = rng.random() < 0.05
        kind_r = rng.random()
        kind = "procedural" if kind_r < 0.75 else ("semantic" if kind_r < 0.9 else "episodic")
        rows.append(
            {
                "i": i,
                "place": place,
                "title": text.title,
                "description": text.description,
                "content": text.content,
                "outcome": text.outcome,
                "tags": text.tags,
                "kind": kind,
                "origin": origin,
                "prior_alpha": initial * 2.0,
                "prior_beta": (1 - initial) * 2.0,
                "alpha": confidence * total,
                "beta": (1 - confidence) * total,
                "confidence": confidence,
                "usage_count": usage,
                "created_at": created,
                "last_used_at": last_used,
                "archived": archived,
                "archived_reason": rng.choice(["stale", "consolidated", "duplicate"]) if archived else "",
                "tier": "archived" if archived else ("hot" if age_days < 30 else "warm" if age_days < 180 else "cold"),
                "embed_text": f"{text.title}\n{text.description}\n{text.content}",  # memory_embedding_text
            }
        )
    texts = [row["embed_text"] for row in rows]
    embedder = embedder_from_settings()
    cached = _vectors_cached(embedder.name, texts)
    embed_seconds = 0.0
    if cached is None:
        # the product's own batch call (what a re-embed or an import makes), one worker per core
        t0 = time.perf_counter()
        vectors = embedder.embed(texts)
        embed_seconds = time.perf_counter() - t0
        _vectors_keep(embedder.name, texts, vectors)
    else:
        vectors = cached
    for row, vector in zip(rows, vectors, strict=True):
        row["vector"] = _vector_text(vector)
    return rows, embed_seconds


def _vector_cache_path(model_name: str, texts: Sequence[str]) -> Path:
    """Where a chunk's vectors are kept: named by the model and a digest of the exact texts, so a change
    of corpus, chunking or model never reads stale vectors."""
    import hashlib

    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:32]
    safe_model = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model_name)
    return VECTOR_CACHE_DIR / safe_model / f"{digest}.npy"


def _vectors_cached(model_name: str, texts: Sequence[str]) -> Any:
    import numpy as np

    path = _vector_cache_path(model_name, texts)
    if not path.is_file():
        return None
    array = np.load(path)
    return array if array.shape[0] == len(texts) else None


def _vectors_keep(model_name: str, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
    import numpy as np

    path = _vector_cache_path(model_name, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, np.asarray(vectors, dtype=np.float32))
    tmp.replace(path)  # whole or absent: an interrupted load leaves no half-written chunk


class _PreformattedVector:
    """A vector already in pgvector's text form (formatted in a worker process)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _install_preformatted_vectors() -> None:
    """Let ``VectorField`` accept ``_PreformattedVector`` without re-formatting 384 floats per row."""
    from pgvector.django import VectorField

    if getattr(VectorField, "_bench_patched", False):
        return
    original = VectorField.get_prep_value

    def get_prep_value(self: Any, value: Any) -> Any:
        if isinstance(value, _PreformattedVector):
            return value.text
        return original(self, value)

    VectorField.get_prep_value = get_prep_value  # type: ignore[method-assign]
    VectorField._bench_patched = True  # type: ignore[attr-defined]


@dataclass
class BenchOrg:
    org: Any
    teams: list[Any]
    projects: list[Any]
    stacks: list[list[str]]


def orgs_ensure() -> dict[str, BenchOrg]:
    """The bench org (enterprise, 2 teams, 10 projects) and two noise orgs (3 projects each)."""
    from accounts.models import Organization, Project, Team
    from accounts.services import organization_create, project_create, team_create

    out: dict[str, BenchOrg] = {}
    for slug in (BENCH_ORG, *NOISE_ORGS):
        org = Organization.objects.filter(slug=slug).first() or organization_create(
            slug=slug, name=f"Benchmark {slug}", plan="enterprise"
        )
        n_teams, stacks = (2, PROJECT_STACKS) if slug == BENCH_ORG else (0, PROJECT_STACKS[:3])
        teams = []
        for t in TEAM_SLUGS[:n_teams]:
            teams.append(
                Team.objects.filter(organization=org, slug=t).first()
                or team_create(organization=org, slug=t, actor=None)
            )
        projects = []
        for pslug, team_index, _stack in stacks:
            team = teams[team_index] if team_index is not None and teams else None
            projects.append(
                Project.objects.filter(organization=org, slug=pslug).first()
                or project_create(organization=org, slug=pslug, team=team, actor=None)
            )
        out[slug] = BenchOrg(org, teams, projects, [list(s[2]) for s in stacks])
    return out


def _index_names_present() -> set[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories_memory'")
        return {row[0] for row in cursor.fetchall()}


def memory_indexes_ensure(log: Any = print, *, maintenance_work_mem: str = "2GB") -> float:
    """(Re)create any of the model's indexes missing from the table (after a bulk load, or after a
    load that was interrupted). Returns the seconds spent building. The HNSW graph is built fast only
    while it fits in ``maintenance_work_mem`` (≈ 2.2 KB a 384-dimension row: 4GB for 1.3M rows)."""
    from django.db import connection

    from memories.models import Memory

    present = _index_names_present()
    missing = [index for index in Memory._meta.indexes if index.name not in present]
    if not missing:
        return 0.0
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
        cursor.execute("SET max_parallel_maintenance_workers = 2")
    for index in missing:
        t0 = time.perf_counter()
        with connection.schema_editor() as editor:
            editor.add_index(Memory, index)
        log(f"  built index {index.name} in {time.perf_counter() - t0:.1f}s")
    with connection.cursor() as cursor:
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
    return time.perf_counter() - started


def bulk_indexes_drop(log: Any = print) -> None:
    from django.db import connection

    from memories.models import Memory

    present = _index_names_present()
    for index in Memory._meta.indexes:
        if index.name in BULK_INDEXES and index.name in present:
            with connection.schema_editor() as editor:
                editor.remove_index(Memory, index)
            log(f"  dropped index {index.name} for the bulk load")


def memories_delete(where_sql: str, params: Sequence[Any]) -> int:
    """Delete memories matching ``where_sql`` (on memories_memory) with raw SQL, first deleting or
    detaching every row of any table that references them (found in the catalog, so new tables
    are covered). Much faster than the ORM collector for 100K rows."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE bench_doomed ON COMMIT DROP AS SELECT id FROM memories_memory WHERE {where_sql}",
            list(params),
        )
        # every foreign key into memories_memory.id (single or composite), with the referencing column
        cursor.execute(
            """
            SELECT cl.relname, a.attname, a.attnotnull
            FROM pg_constraint c
            JOIN pg_class cl ON cl.oid = c.conrelid
            JOIN pg_attribute ref ON ref.attrelid = c.confrelid AND ref.attname = 'id'
            JOIN pg_attribute a ON a.attrelid = c.conrelid
                AND a.attnum = c.conkey[array_position(c.confkey, ref.attnum)]
            WHERE c.contype = 'f' AND c.confrelid = 'memories_memory'::regclass
            """
        )
        for table, column, not_null in cursor.fetchall():
            doomed = f'"{column}" IN (SELECT id FROM bench_doomed)'
            if not_null:
                cursor.execute(f'DELETE FROM "{table}" WHERE {doomed}')
            else:
                cursor.execute(f'UPDATE "{table}" SET "{column}" = NULL WHERE {doomed}')
        cursor.execute("DELETE FROM memories_memory WHERE id IN (SELECT id FROM bench_doomed)")
        return cursor.rowcount


def _vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")


def dataset_reset(log: Any = print) -> None:
    """Remove the bench and noise orgs and everything in them."""
    from accounts.models import ApiToken, Organization, Project, Team

    orgs = list(Organization.objects.filter(slug__in=[BENCH_ORG, *NOISE_ORGS]))
    if not orgs:
        return
    ids = [o.id for o in orgs]
    bulk_indexes_drop(log)  # deleting 100K rows from an HNSW graph is slow; rebuilding is not
    deleted = memories_delete("organization_id = ANY(%s)", [ids])
    log(f"  deleted {deleted} memories of {', '.join(o.slug for o in orgs)}")
    ApiToken.objects.filter(organization_id__in=ids).delete()
    Project.objects.filter(organization_id__in=ids).delete()
    Team.objects.filter(organization_id__in=ids).delete()
    Organization.objects.filter(id__in=ids).delete()
    _vacuum_analyze()
    memory_indexes_ensure(log)


def _counts(org: Any) -> tuple[int, int]:
    """(memories of the org, of which with ids 0..count-1 in our deterministic scheme)."""
    from memories.models import Memory

    total = Memory.objects.filter(organization=org).count()
    prefix = ID_PREFIX[org.slug]
    in_range = (
        Memory.objects.filter(organization=org, id__startswith=prefix, id__lt=memory_id(org.slug, total)).count()
        if total
        else 0
    )
    return total, in_range


def _foreign_embeddings(model_name: str) -> dict[str, int]:
    """Bench memories embedded by another model than ``model_name``, by that model's name."""
    from django.db.models import Count

    from memories.models import Memory

    rows = (
        Memory.objects.filter(organization__slug__in=[BENCH_ORG, *NOISE_ORGS])
        .exclude(embedding_model=model_name)
        .values("embedding_model")
        .annotate(n=Count("id"))
    )
    return {row["embedding_model"]: row["n"] for row in rows}


def dataset_ensure(n: int, *, reset: bool = False, log: Any = print) -> dict[str, Any]:
    """Make the database hold exactly ``n`` bench memories plus 5% of ``n`` in each noise org, embedded
    by the configured embedder.

    Idempotent: nothing is loaded when the counts already match; a smaller dataset is topped up,
    a larger one loses its tail; memories another embedder made (the default changed, or an
    ``EMBEDDER`` given for one run) are loaded again: their vectors would not match the queries'.
    Large loads drop the HNSW and GIN indexes and rebuild them after.
    """
    from django.db import connection

    from memories.models import Memory
    from reasoningbank.ai.embedders import embedder_from_settings

    started = time.perf_counter()
    embedder = embedder_from_settings()
    if not reset and (foreign := _foreign_embeddings(embedder.name)):
        log(f"  memories embedded by another model ({foreign}), not {embedder.name}: loading the data again")
        reset = True
    if reset:
        log("resetting the benchmark data")
        dataset_reset(log)
    memory_indexes_ensure(log)  # an interrupted earlier load may have left them dropped
    orgs = orgs_ensure()
    targets = {BENCH_ORG: n, **{slug: int(n * NOISE_FRACTION) for slug in NOISE_ORGS}}
    plan: dict[str, tuple[int, int]] = {}
    changed = shrunk = False
    for slug, target in targets.items():
        total, in_range = _counts(orgs[slug].org)
        if total != in_range:  # not our id scheme (should not happen): start that org again
            log(f"  {slug}: {total} memories not in the bench id scheme; reloading it")
            memories_delete("organization_id = %s", [orgs[slug].org.id])
            changed = True
            total = 0
        if total > target:
            log(f"  {slug}: dropping {total - target} memories beyond {target}")
            bulk_indexes_drop(log)
            memories_delete("organization_id = %s AND id >= %s", [orgs[slug].org.id, memory_id(slug, target)])
            changed = shrunk = True
            total = target
        plan[slug] = (total, target)
    to_load = sum(target - have for have, target in plan.values())
    load_seconds = embed_seconds = 0.0
    if to_load:
        if to_load > 5000:
            bulk_indexes_drop(log)
        _install_preformatted_vectors()
        now = time.time()
        workers = max(1, min(2, os.cpu_count() or 1))
        log(f"  loading {to_load:,} memories embedded by {embedder.name} in {workers} worker processes")
        t0 = time.perf_counter()
        done = 0
        import multiprocessing

        # spawn, not fork: each worker builds its own embedder (a model, a runtime's threads) from settings
        ctx = multiprocessing.get_context("spawn")
        from django.conf import settings

        from reasoningbank.ai.embedders import EMBEDDER_SETTINGS

        # what ``embedder_from_settings`` reads: a loader worker gets these values and nothing else of Django's
        embedder_settings = {name: getattr(settings, name) for name in EMBEDDER_SETTINGS}
        with ctx.Pool(processes=workers, initializer=_worker_init, initargs=(embedder_settings,)) as pool:
            for slug, (have, target) in plan.items():
                if have >= target:
                    continue
                bo = orgs[slug]
                jobs = [
                    (ORG_SEED[slug], s, min(s + LOAD_BATCH, target), bo.stacks, now)
                    for s in range(have, target, LOAD_BATCH)
                ]
                # the next chunks are embedded in the workers while this process inserts one
                for rows, seconds in pool.imap(_generate_chunk, jobs):
                    embed_seconds += seconds
                    Memory.objects.bulk_create(
                        [_memory_from_row(slug, bo, row, embedder.name) for row in rows], batch_size=LOAD_BATCH
                    )
                    done += len(rows)
                    rate = done / (time.perf_counter() - t0)
                    if done % 10_000 < LOAD_BATCH or done == to_load:
                        log(f"  loaded {done:,}/{to_load:,} memories ({rate:.0f}/s)")
        load_seconds = time.perf_counter() - t0
        changed = True
    if shrunk:  # give the space back (and rebuild the b-trees) so a smaller dataset is not a bloated one
        t0 = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM FULL memories_memory")
        log(f"  VACUUM FULL memories_memory in {time.perf_counter() - t0:.1f}s")
    index_seconds = memory_indexes_ensure(log)
    if changed:
        t0 = time.perf_counter()
        _vacuum_analyze()
        log(f"  VACUUM ANALYZE memories_memory in {time.perf_counter() - t0:.1f}s")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size('memories_memory')), "
            "pg_size_pretty(pg_relation_size('memory_embedding_hnsw')), count(*) FROM memories_memory"
        )
        table_size, hnsw_size, table_rows = cursor.fetchone()
    return {
        "embedder": embedder.name,
        "bench_memories": n,
        "noise_memories": sum(targets[s] for s in NOISE_ORGS),
        "table_rows": table_rows,
        "table_size": table_size,
        "hnsw_size": hnsw_size,
        "loaded": to_load,
        "load_seconds": round(load_seconds, 1),
        "load_memories_per_second": round(to_load / load_seconds, 1) if load_seconds else None,
        # the workers' embedding calls, summed: ~2x the wall time embedding took when both cores work
        "embedding_worker_seconds": round(embed_seconds, 1),
        "index_build_seconds": round(index_seconds, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "orgs": orgs,
    }


def _memory_from_row(slug: str, bo: BenchOrg, row: dict[str, Any], model_name: str) -> Any:
    from datetime import datetime as dt

    from memories.models import Memory

    kind, index = row["place"]
    project = bo.projects[index] if kind == "project" else None
    team = None
    if kind == "team":
        if not bo.teams:  # an org without teams: org-level instead
            kind = "org"
        else:
            team = bo.teams[index]
    created = dt.fromtimestamp(row["created_at"], UTC)
    return Memory(
        id=memory_id(slug, row["i"]),
        organization=bo.org,
        project=project,
        team=team,
        title=row["title"],
        description=row["description"],
        content=row["content"],
        outcome=row["outcome"],
        tags=row["tags"],
        kind=row["kind"],
        state="archived" if row["archived"] else "active",
        archived_reason=row["archived_reason"],
        archived_at=created if row["archived"] else None,
        tier=row["tier"],
        prior_alpha=row["prior_alpha"],
        prior_beta=row["prior_beta"],
        alpha=row["alpha"],
        beta=row["beta"],
        confidence=row["confidence"],
        usage_count=row["usage_count"],
        last_used_at=dt.fromtimestamp(row["last_used_at"], UTC) if row["last_used_at"] else None,
        embedding=_PreformattedVector(row["vector"]),
        embedding_model=model_name,
        origin=row["origin"],
        created_at=created,
        updated_at=created,
    )
