"""The bank ``bench/consolidate.py`` measures consolidation on, in a child process's own database:
loaded once (``ensure_dataset``: the vectors of ``_consolidation_data.py`` written with
``bulk_create``, the HNSW index rebuilt after a large load) and reused, and put back before every run
(``reset``) to the pristine state of a freshly loaded bank; ``slice_make_due`` ages one slice of the
stored neighbour graph for the "a later day" run. Django is set up by the caller.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

DATASET_VERSION = 1


def ensure_dataset(size: int, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from _consolidation_data import generate
    from django.conf import settings
    from django.db import connection

    from accounts.models import Organization, Project
    from accounts.services import organization_create, project_create
    from memories.models import Memory

    slug = f"bench-c{size}-s{args.seed}-v{DATASET_VERSION}"
    info_path = Path(os.environ["RB_DATA_DIR"]) / f"{slug}.json"
    org = Organization.objects.filter(slug=slug).first()
    if org is not None and not args.reload and info_path.exists():
        project = Project.objects.get(organization=org, slug="bank")
        if Memory.objects.filter(project=project, origin=Memory.ORIGIN_RECORDED).count() == size:
            info = json.loads(info_path.read_text())
            rewrite_if_fillfactor_changed(info_path, info)
            info["reused"] = True
            return project, info
    if org is not None:  # stale or partial: start over (dedicated database)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM memories_memorylink WHERE organization_id = %s", [org.id])
            cursor.execute("DELETE FROM memories_memorysignal WHERE organization_id = %s", [org.id])
            cursor.execute(
                "UPDATE memories_memory SET consolidated_into_id = NULL WHERE organization_id = %s", [org.id]
            )
            cursor.execute("DELETE FROM memories_memory WHERE organization_id = %s", [org.id])
        org.delete()
    t = time.perf_counter()
    data = generate(size, settings.EMBEDDING_DIMENSIONS, seed=args.seed)
    gen_s = time.perf_counter() - t
    org = organization_create(slug=slug, plan="enterprise")
    project = project_create(organization=org, slug="bank", actor=None)
    t = time.perf_counter()
    load(org, project, data, seed=args.seed)
    load_s = time.perf_counter() - t
    info = {
        "slug": slug,
        "structure": data.structure,
        "vectors": "numpy (controlled cosine structure)",
        "generate_seconds": round(gen_s, 2),
        "load_seconds": round(load_s, 2),
        "reused": False,
    }
    info["reloptions_at_rewrite"] = table_info()["reloptions"]  # freshly written under them
    info_path.write_text(json.dumps(info))
    return project, info


def load(org: Any, project: Any, data: Any, *, seed: int) -> None:
    """bulk_create in batches; for large loads the HNSW index is dropped and rebuilt after."""
    from datetime import timedelta

    import numpy as np
    from django.db import connection, transaction
    from django.utils import timezone

    from memories.models import Memory

    rng = np.random.default_rng(seed + 1)
    n = len(data.titles)
    now = timezone.now()
    age_days = rng.uniform(0, 120, n)
    episodic_recent = rng.uniform(0, 6, n)  # episodic memories: the last week (pattern extraction)
    used = rng.random(n) < 0.4
    usage = rng.poisson(1.5, n) * used
    confidence = rng.uniform(0.5, 0.95, n)
    low_importance = rng.random(n) < 0.3
    rebuild = n >= 20_000
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        (indexdef,) = cursor.fetchone()
        if rebuild:
            cursor.execute("DROP INDEX memory_embedding_hnsw")
    try:
        batch = 2_000
        for start in range(0, n, batch):
            rows = []
            for i in range(start, min(n, start + batch)):
                episodic = data.kinds[i] == "episodic"
                created = now - timedelta(days=float(episodic_recent[i] if episodic and i % 2 else age_days[i]))
                importance = (0.2 if low_importance[i] else 0.5) if episodic else 0.85
                rows.append(
                    Memory(
                        organization=org,
                        project=project,
                        title=data.titles[i],
                        description=data.descriptions[i],
                        content=data.contents[i],
                        outcome="success",
                        tags=data.tags[i],
                        kind=data.kinds[i],
                        importance=importance,
                        confidence=float(confidence[i]),
                        usage_count=int(usage[i]),
                        last_used_at=created + (now - created) * 0.5 if used[i] else None,
                        embedding=data.vectors[i],
                        embedding_model="bench-numpy",
                        created_at=created,
                        updated_at=created,
                    )
                )
            with transaction.atomic():
                Memory.objects.bulk_create(rows)
            print(f"  loaded {min(n, start + batch):,}/{n:,}", end="\r", flush=True)
        print()
    finally:
        if rebuild:
            t = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute("SET maintenance_work_mem = '1GB'")
                cursor.execute("SET max_parallel_maintenance_workers = 2")
                cursor.execute(indexdef)
            print(f"  HNSW index rebuilt in {time.perf_counter() - t:.1f}s")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")


def table_info() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'memories_memory'")
        options = cursor.fetchone()[0] or []
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories_memory' ORDER BY indexname"
        )
        indexes = {name: definition.split(" USING ", 1)[-1] for name, definition in cursor.fetchall()}
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size(c.oid)), pg_size_pretty(pg_relation_size(c.oid)), "
            "pg_size_pretty(pg_relation_size(c.reltoastrelid)), a.attstorage "
            "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'embedding' "
            "WHERE c.relname = 'memories_memory'"
        )
        total, heap, toast, storage = cursor.fetchone()
    return {
        "reloptions": options,
        "embedding_storage": {"p": "plain", "m": "main", "e": "external", "x": "extended"}.get(storage, storage),
        "indexes": indexes,
        "total_size": total,
        "heap_size": heap,
        "toast_size": toast,
    }


def rewrite_if_fillfactor_changed(info_path: Path, info: dict[str, Any]) -> None:
    """A fillfactor set by a migration only applies to pages written afterwards: rewrite the table
    once (as an operator would with VACUUM FULL / pg_repack) so the data set matches the schema."""
    from django.db import connection

    options = table_info()["reloptions"]
    if info.get("reloptions_at_rewrite", []) == options:
        return
    t = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute("VACUUM FULL ANALYZE memories_memory")
    info["reloptions_at_rewrite"] = options
    info["rewrite_seconds"] = round(time.perf_counter() - t, 2)
    info_path.write_text(json.dumps(info))
    print(f"  table rewritten for reloptions {options} in {info['rewrite_seconds']} s", flush=True)


def add_new_memories(project: Any, count: int, *, seed: int) -> int:
    """``count`` new memories as a day's sessions would bring them (origin ``distilled``, so ``reset``
    removes them): half reword an existing memory (cosine 0.82–0.92, copied text with an edit: a
    judge pair each, often a cluster member), half are new subjects (singletons)."""
    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from memories.models import Memory

    rng = np.random.default_rng(seed + 7)
    active = list(
        Memory.objects.filter(project=project, state=Memory.STATE_ACTIVE, origin=Memory.ORIGIN_RECORDED)
        .order_by("id")
        .values_list("id", "title", "description", "content", "tags", "kind", "embedding")
    )
    now = timezone.now()
    rows = []
    for i in range(count):
        if i % 2 == 0:
            _, title, description, content, tags, kind, embedding = active[int(rng.integers(len(active)))]
            base = np.asarray(embedding, dtype=np.float32)
            cos = float(rng.uniform(0.82, 0.92))
            text = (f"{title} (again)", description, content + " Seen again in a later session.", tags, kind)
        else:
            base = rng.standard_normal(len(active[0][6])).astype(np.float32)
            cos = 0.0
            text = (
                f"New subject {i}: check the deploy step {i}",
                f"Use when deploying service {i}.",
                f"When deploying service {i}, check the health endpoint before switching traffic.",
                ["deploy", f"new-{i}"],
                "procedural",
            )
        base /= np.linalg.norm(base)
        noise = rng.standard_normal(base.shape[0]).astype(np.float32)
        noise -= noise.dot(base) * base
        noise /= np.linalg.norm(noise)
        vector = cos * base + np.sqrt(1 - cos * cos) * noise
        title, description, content, tags, kind = text
        rows.append(
            Memory(
                organization_id=project.organization_id,
                project=project,
                title=title[:200],
                description=description,
                content=content,
                outcome="success",
                tags=list(tags),
                kind=kind,
                importance=0.85,
                confidence=0.7,
                embedding=vector / np.linalg.norm(vector),
                embedding_model="bench-numpy",
                origin=Memory.ORIGIN_DISTILLED,
                created_at=now,
                updated_at=now,
            )
        )
    with transaction.atomic():
        Memory.objects.bulk_create(rows)
    return len(rows)


def slice_make_due(project: Any) -> None:
    """Age the stored graph's oldest slice past the re-probe age, as the calendar would."""
    from datetime import datetime

    from consolidation.models import NeighbourGraph
    from consolidation.run_state import GRAPH_REPROBE_AFTER

    graph = NeighbourGraph.objects.get(project=project)
    stamps = [datetime.fromisoformat(at) for at in graph.slices_probed_at]
    oldest = stamps.index(min(stamps))
    stamps[oldest] -= GRAPH_REPROBE_AFTER
    graph.slices_probed_at = [at.isoformat() for at in stamps]
    graph.save(update_fields=["slices_probed_at"])


def reset(project: Any) -> None:
    """Back to the pristine data set: sources active again, everything a run created removed, the
    stored neighbour graph dropped, retention and tiers at their defaults."""
    from django.db import connection

    from consolidation.models import ConsolidationRun
    from memories.models import Memory

    org_id = project.organization_id
    with connection.cursor() as cursor:
        # a freshly loaded bank: no stored neighbour graph (the first run probes every memory) and
        # every memory still at the model's default retention/tier (the first run re-tiers them all)
        cursor.execute("DELETE FROM consolidation_neighbouredge WHERE project_id = %s", [project.id])
        cursor.execute("DELETE FROM consolidation_neighbourgraph WHERE project_id = %s", [project.id])
        cursor.execute(
            "UPDATE memories_memory SET tier = 'hot', retention = 1.0 "
            "WHERE project_id = %s AND (tier <> 'hot' OR retention <> 1.0)",
            [project.id],
        )
        cursor.execute("DELETE FROM memories_memorylink WHERE organization_id = %s", [org_id])
        cursor.execute("DELETE FROM memories_memorysignal WHERE organization_id = %s", [org_id])
        cursor.execute(
            "UPDATE memories_memory SET state = 'active', archived_reason = '', archived_at = NULL, "
            "consolidated_into_id = NULL WHERE project_id = %s AND origin = 'recorded' "
            "AND (state <> 'active' OR consolidated_into_id IS NOT NULL)",
            [project.id],
        )
        cursor.execute("DELETE FROM reasoningbank_llmcall WHERE organization_id = %s", [org_id])
        # the judge's verdicts are what a later run reuses: a fresh bank has none
        cursor.execute("DELETE FROM consolidation_reviewitem WHERE organization_id = %s", [org_id])
    # what the runs created (and the new memories of an incremental run), with the rows that hang on
    # them — summaries, links, review items — through the ORM's cascade
    Memory.objects.filter(project=project).exclude(origin=Memory.ORIGIN_RECORDED).delete()
    ConsolidationRun.objects.filter(project=project).delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")
