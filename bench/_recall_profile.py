"""Where a tool-time recall's server time goes (``bench/hooks_code.py --profile``): ``memory_recall_run`` in
this process — its statements counted and timed, cProfile's top functions — then the same request through
Django's whole stack (middleware, token authentication, the view) without uvicorn, and ``EXPLAIN (ANALYZE,
BUFFERS)`` of every statement one recall runs. The bench's own events: a Read of a file (two in three
anchored) and a failing test run whose error is anchored (three in four), sessions of 20 calls."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import random
import statistics
import time
import uuid
from typing import Any

from bench.common import Latency

CATEGORIES = ("anchors", "memories", "sources", "ledger", "project", "token", "other")


def _category(sql: str) -> str:
    head = sql.lstrip()[:60].upper()
    if head.startswith(("INSERT", "UPDATE", "DELETE")):
        return "ledger" if "SESSION" in sql[:80].upper() else "other"
    table = sql.split(" FROM ", 1)[-1][:40]
    if '"memories_memoryanchor"' in table:
        return "anchors"
    if '"accounts_apitoken"' in table or '"accounts_organization"' in table:
        return "token"
    if '"accounts_project"' in table:
        return "project"
    if '"memories_memory"' in table:  # the memories (their sources too, since they are read together)
        return "sources" if sql.lstrip().startswith('SELECT "memories_memory"."id" AS "id"') else "memories"
    return "other"


class Statements:
    """``connection.execute_wrapper``: every statement with its time."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, Any, float]] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.rows.append((sql, params, (time.perf_counter() - t0) * 1000))


def recall_inputs(kind: str, count: int, rng: random.Random, module_file: Any, traceback: Any) -> list[dict[str, Any]]:
    """The request bodies the hook sends for ``count`` events of ``kind`` (``path`` or ``error``)."""
    from bench.hooks_code import FILES_PER_MODULE, MODULES, PATH_EVERY, REMOTE, SIGNATURES

    bodies, session = [], ""
    for n in range(count):
        if n % 20 == 0:
            session = f"profile-{uuid.uuid4()}"
        body: dict[str, Any] = {"session_id": session, "repository": REMOTE, "limit": 2, "token_budget": 500}
        if kind == "path":
            index = rng.randrange(MODULES * FILES_PER_MODULE)
            index = index - index % PATH_EVERY + (0 if rng.random() < 2 / 3 else 1)
            body.update(path=f"/home/dev/app/{module_file(index)}", root="/home/dev/app")
        else:
            known = rng.random() < 0.75
            which = rng.randrange(SIGNATURES) if known else SIGNATURES + rng.randrange(10_000)
            body["error"] = traceback(which, "/home/dev/app", 40 + rng.randrange(200) if known else 3)
        bodies.append(body)
    return bodies


def profile_recall(token: Any, raw_token: str, calls: int, module_file: Any, traceback: Any) -> dict[str, Any]:
    from django.db import connection
    from django.test import Client

    from accounts.access import principal_for_token
    from memories.code.contracts_recall import RecallInput, memory_recall_run

    principal = principal_for_token(token)
    rng = random.Random(11)
    client = Client()
    out: dict[str, Any] = {}
    for kind in ("path", "error"):
        bodies = recall_inputs(kind, calls, rng, module_file, traceback)
        for body in bodies[:5]:  # warm-up: caches, connection, first statements planned
            memory_recall_run(principal, RecallInput(**{**body, "session_id": f"warm-{uuid.uuid4()}"}))
        totals, cpus, counts = [], [], []
        per_category: dict[str, list[float]] = {c: [] for c in CATEGORIES}
        sample: list[tuple[str, Any, float]] = []
        for body in bodies:
            statements = Statements()
            with connection.execute_wrapper(statements):
                t0, c0 = time.perf_counter(), time.process_time()
                memory_recall_run(principal, RecallInput(**body))
                totals.append((time.perf_counter() - t0) * 1000)
                cpus.append((time.process_time() - c0) * 1000)
            counts.append(len(statements.rows))
            sums = dict.fromkeys(CATEGORIES, 0.0)
            for sql, _, ms in statements.rows:
                sums[_category(sql)] += ms
            for c in CATEGORIES:
                per_category[c].append(sums[c])
            if len(statements.rows) > len(sample):
                sample = statements.rows
        # the whole Django stack in process: middleware, the token's authentication, parsing, rendering
        stack, stack_counts = [], []
        for body in recall_inputs(kind, calls, rng, module_file, traceback):
            statements = Statements()
            with connection.execute_wrapper(statements):
                t0 = time.perf_counter()
                reply = client.post(
                    "/api/v1/memories/recall", data=json.dumps(body), content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {raw_token}",
                )  # fmt: skip
                stack.append((time.perf_counter() - t0) * 1000)
            assert reply.status_code == 200, reply.content[:300]
            stack_counts.append(len(statements.rows))
        profiler = cProfile.Profile()
        profiler.enable()
        for body in bodies[: min(60, calls)]:
            memory_recall_run(principal, RecallInput(**{**body, "session_id": f"prof-{uuid.uuid4()}"}))
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
        out[kind] = {
            "operation": Latency.of(totals).as_dict(),
            "operation_cpu": Latency.of(cpus).as_dict(),
            "statements": {"mean": round(statistics.mean(counts), 2), "max": max(counts)},
            "sql_ms_p50": {c: round(statistics.median(v), 2) for c, v in per_category.items()},
            "django_stack": Latency.of(stack).as_dict(),
            "django_stack_statements": {"mean": round(statistics.mean(stack_counts), 2), "max": max(stack_counts)},
            "explain": explain(sample),
            "cprofile": text.getvalue(),
        }
    return out


def explain(rows: list[tuple[str, Any, float]]) -> list[dict[str, Any]]:
    """EXPLAIN (ANALYZE, BUFFERS) of each statement, a write inside a transaction that is rolled back."""
    from django.db import connection, transaction

    plans = []
    for sql, params, ms in rows:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                transaction.set_rollback(True)
        except Exception as exc:  # a statement EXPLAIN cannot take (SAVEPOINT, SET): said, not fatal
            plan = f"(not explained: {exc})"
        plans.append({"category": _category(sql), "ms": round(ms, 2), "sql": sql[:600], "plan": plan})
    return plans


def print_profile(report: dict[str, Any]) -> None:
    for kind, r in report.items():
        op, stack = r["operation"], r["django_stack"]
        print(
            f"== recall by {kind}: memory_recall_run p50 {op['p50']:.1f} ms p90 {op['p90']:.1f} "
            f"p99 {op['p99']:.1f} (cpu p50 {r['operation_cpu']['p50']:.1f}); statements {r['statements']}; "
            f"SQL p50 {r['sql_ms_p50']}"
        )
        print(
            f"   Django stack in process p50 {stack['p50']:.1f} ms p99 {stack['p99']:.1f}; "
            f"statements {r['django_stack_statements']}"
        )
        for plan in r["explain"]:
            print(f"-- [{plan['category']}] {plan['ms']} ms: {plan['sql'][:300]}\n{plan['plan']}\n")
        print(r["cprofile"])
