"""The 1M data set of ``scale.py``: the 100K bench data set (``_dataset.py``, real vectors of the product's
embedder, read from the vector cache) grown to N memories in org ``bench`` by *derived variants*, plus the
noise orgs grown to 5% of N each and optionally many small organisations (large-tenant experiment).

How a variant is derived (bench/README.md, "scale.py"): memory ``b`` of the 100K base gives memories
``b + v·100K`` for v = 1…9. Its text is the base text with one more sentence built from the corpus
vocabulary (a language, a tool, a database picked by the index), so the full-text leg sees different
documents; its vector is the base's real vector plus Gaussian noise (σ per dimension, ``--sigma``),
renormalised to unit length, so each variant sits at a cosine of ≈ 1/√(1 + 384σ²) from its base (0.93
for σ = 0.02) — a near-duplicate, as an unconsolidated bank holds. Everything else (place, kind,
confidence, usage, tier, state) is the base row's, the creation time moved by up to ± 3 days. Embedding
900K texts with the default embedder would take over an hour of both cores; deriving them in SQL takes
minutes and keeps every vector in the real embedding space.
"""

from __future__ import annotations

import time
from typing import Any

from _dataset import (
    BENCH_ORG,
    ID_PREFIX,
    NOISE_FRACTION,
    NOISE_ORGS,
    bulk_indexes_drop,
    dataset_ensure,
    memory_indexes_ensure,
    orgs_ensure,
)
from _vocabulary import DATABASES, LANGUAGES, TOOLS

BASE_N = 100_000  # the real-vector data set every variant derives from
SMALL_ORG_PREFIX = "bench-small-"
DEFAULT_SIGMA = 0.02
# the columns a variant rewrites; every other column is copied from its base row
_REWRITTEN = {"id", "organization_id", "project_id", "team_id", "content", "embedding", "created_at", "updated_at"}
_GENERATED = {"search_vector"}


def memory_columns() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'memories_memory' "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position"
        )
        return [row[0] for row in cursor.fetchall() if row[0] not in _GENERATED]


def _count(org_id: int, prefix: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memories_memory WHERE organization_id = %s AND id LIKE %s", [org_id, prefix + "%"]
        )
        return int(cursor.fetchone()[0])


def _derive_sql(columns: list[str]) -> str:
    """INSERT … SELECT of one block of variants: base rows [lo, hi) of ``src_org`` become rows of ``org``
    with index + ``offset``. The noise subquery names the outer row so it runs once per row (an
    uncorrelated one would run once for the whole statement and give every row the same noise)."""
    idx = "substr(m.id, length(%(src_prefix)s) + 1)::int"
    word = (
        "(%(words_{n})s::text[])[1 + (("
        + idx
        + " * {mul} + %(variant)s * {add}) %% cardinality(%(words_{n})s::text[]))]"
    )
    sentence = (
        "format('Seen again in the %%s service, deployed with %%s, with %%s behind it.', "
        + ", ".join(word.format(n=n, mul=m, add=a) for n, m, a in (("l", 7, 3), ("t", 11, 5), ("d", 13, 7)))
        + ")"
    )
    values = {
        "id": f"%(prefix)s || lpad(({idx} + %(offset)s)::text, 8, '0')",
        "organization_id": "%(org)s",
        # the source org's project and team ids mapped to the target's (NULL stays NULL: ->> of a NULL key)
        "project_id": "(%(project_map)s::jsonb ->> m.project_id::text)::bigint",
        "team_id": "(%(team_map)s::jsonb ->> m.team_id::text)::bigint",
        "content": f"left(m.content || ' ' || {sentence}, 20000)",
        "embedding": (
            "l2_normalize(m.embedding + (SELECT array_agg(random_normal(0, %(sigma)s))::vector "
            "FROM generate_series(1, vector_dims(m.embedding)) WHERE m.id IS NOT NULL))"
        ),
        "created_at": "m.created_at + (random() - 0.5) * interval '6 days'",
        "updated_at": "m.created_at",
    }
    select = ", ".join(values.get(c, f"m.{c}") for c in columns)
    return (
        f"INSERT INTO memories_memory ({', '.join(columns)}) SELECT {select} FROM memories_memory m "
        "WHERE m.organization_id = %(src_org)s AND m.id >= %(lo)s AND m.id < %(hi)s"
    )


def _derive(
    columns: list[str],
    *,
    src: Any,
    dst: Any,
    prefix: str,
    src_prefix: str,
    first: int,
    count: int,
    base_n: int,
    sigma: float,
    variant_of: int = 0,
    variant: int | None = None,
) -> int:
    """Rows ``first … first+count-1`` of ``dst`` (id prefix ``prefix``), row i derived from base row
    ``i mod base_n`` of ``src``. Returns the rows written."""
    from django.db import connection, transaction

    project_map = {str(p.id): dst.projects[k % len(dst.projects)].id for k, p in enumerate(src.projects)}
    # a team memory stays a team memory when the target org has teams, else it becomes org-level
    team_map = {str(t.id): dst.teams[k % len(dst.teams)].id for k, t in enumerate(src.teams)} if dst.teams else {}
    import json

    written = 0
    i = first
    while i < first + count:
        block_start = (i // base_n) * base_n
        lo = i - block_start
        hi = min(base_n, lo + (first + count - i))
        params = {
            "prefix": prefix,
            "src_prefix": src_prefix,
            "offset": block_start + variant_of,
            "org": dst.org.id,
            "src_org": src.org.id,
            "lo": f"{src_prefix}{lo:08d}",
            "hi": f"{src_prefix}{hi:08d}",
            "project_map": json.dumps(project_map),
            "team_map": json.dumps(team_map),
            "sigma": sigma,
            "variant": block_start // base_n if variant is None else variant,
            "words_l": LANGUAGES,
            "words_t": TOOLS,
            "words_d": DATABASES,
        }
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_derive_sql(columns), params)
            written += cursor.rowcount
        i = block_start + hi
    return written


def small_orgs_ensure(count: int) -> list[Any]:
    """``count`` small organisations (``bench-small-0001`` …), one project each, no teams."""
    from _dataset import BenchOrg

    from accounts.models import Organization, Project
    from accounts.services import organization_create, project_create

    out = []
    for k in range(1, count + 1):
        slug = f"{SMALL_ORG_PREFIX}{k:04d}"
        org = Organization.objects.filter(slug=slug).first() or organization_create(
            slug=slug, name=f"Small tenant {k}", plan="enterprise"
        )
        project = Project.objects.filter(organization=org, slug="app").first() or project_create(
            organization=org, slug="app", actor=None
        )
        out.append(BenchOrg(org, [], [project], [[]]))
    return out


def dataset_scale(
    n: int,
    *,
    small_orgs: int = 0,
    small_size: int = 1000,
    sigma: float = DEFAULT_SIGMA,
    maintenance_work_mem: str = "4GB",
    log: Any = print,
) -> dict[str, Any]:
    """Make the database hold ``n`` memories in org ``bench`` (real vectors for the first 100K, derived
    variants beyond), 5% of ``n`` in each noise org, and ``small_orgs`` organisations of ``small_size``
    memories. Idempotent: what is there already is kept; only what is missing is derived."""
    from django.db import connection

    started = time.perf_counter()
    orgs = orgs_ensure()
    bench_have = _count(orgs[BENCH_ORG].org.id, ID_PREFIX[BENCH_ORG])
    base_info: dict[str, Any] = {}
    if bench_have <= BASE_N:  # the real-vector base first (the vector cache makes it an insert, no embedding)
        base_info = dataset_ensure(BASE_N, log=log)
        base_info.pop("orgs", None)
    columns = memory_columns()
    targets = {
        BENCH_ORG: (n, BASE_N),
        **{s: (int(n * NOISE_FRACTION), int(BASE_N * NOISE_FRACTION)) for s in NOISE_ORGS},
    }
    todo = []
    for slug, (target, base_n) in targets.items():
        have = _count(orgs[slug].org.id, ID_PREFIX[slug])
        if have < target:
            todo.append((slug, have, target, base_n))
    smalls = small_orgs_ensure(small_orgs) if small_orgs else []
    small_todo = [
        (k, bo, have)
        for k, bo in enumerate(smalls, start=1)
        if (have := _count(bo.org.id, f"mem_small{k:04d}_")) < small_size
    ]
    derived = 0
    t0 = time.perf_counter()
    if todo or small_todo:
        bulk_indexes_drop(log)
        for slug, have, target, base_n in todo:
            prefix = ID_PREFIX[slug]
            # in blocks of at most 50K rows, so progress shows and a transaction stays short
            for first in range(have, target, 50_000):
                count = min(50_000, target - first)
                derived += _derive(
                    columns,
                    src=orgs[slug],
                    dst=orgs[slug],
                    prefix=prefix,
                    src_prefix=prefix,
                    first=first,
                    count=count,
                    base_n=base_n,
                    sigma=sigma,
                )
                log(f"  {slug}: {first + count:,}/{target:,} ({derived / (time.perf_counter() - t0):.0f} rows/s)")
        noise = orgs[NOISE_ORGS[0]]
        noise_base = int(BASE_N * NOISE_FRACTION)
        for k, bo, have in small_todo:
            # each small org a different slice of noise org 1's real-vector rows, noised
            start = ((k - 1) * small_size) % noise_base
            derived += _derive(
                columns,
                src=noise,
                dst=bo,
                prefix=f"mem_small{k:04d}_",
                src_prefix=ID_PREFIX[NOISE_ORGS[0]],
                first=have + start,
                count=min(small_size - have, noise_base - start),
                base_n=noise_base,
                sigma=sigma,
                variant_of=-start,
                variant=k,
            )
            if k % 50 == 0 or k == len(smalls):
                log(f"  small orgs: {k}/{len(smalls)} ({derived / (time.perf_counter() - t0):.0f} rows/s)")
    derive_seconds = time.perf_counter() - t0
    index_seconds = memory_indexes_ensure(log, maintenance_work_mem=maintenance_work_mem)
    if derived:
        t1 = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE memories_memory")
        log(f"  VACUUM ANALYZE memories_memory in {time.perf_counter() - t1:.1f}s")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size('memories_memory')), "
            "pg_size_pretty(pg_relation_size('memory_embedding_hnsw')), count(*) FROM memories_memory"
        )
        table_size, hnsw_size, table_rows = cursor.fetchone()
    return {
        "bench_memories": n,
        "base_real_vectors": BASE_N,
        "sigma": sigma,
        "small_orgs": small_orgs,
        "small_size": small_size,
        "table_rows": table_rows,
        "table_size": table_size,
        "hnsw_size": hnsw_size,
        "derived": derived,
        "derive_seconds": round(derive_seconds, 1),
        "index_build_seconds": round(index_seconds, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "base": base_info,
        "orgs": orgs,
        "small": smalls,
    }
