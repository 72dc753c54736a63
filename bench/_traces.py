"""Synthetic but realistic agent-session traces (5–20 KB) for the distillation benchmark.

A trace is what an agent would submit: the user's task, the assistant's reasoning, tool calls
(file reads with code, shell commands, test output, diffs) and a closing summary. Content is
generated from a seeded RNG so runs are reproducible. The task line carries ``[topic N]`` so the
stub LLM can make sessions on the same topic produce overlapping memories.
"""

from __future__ import annotations

import random
import string

_AREAS = [
    "billing webhook retries",
    "postgres migration",
    "login rate limiter",
    "CSV export",
    "search ranking",
    "celery to django-q move",
    "S3 upload signing",
    "flaky selenium test",
    "GraphQL pagination",
    "timezone bug",
    "Docker build cache",
    "OpenAPI schema drift",
    "memory leak in worker",
    "N+1 queries in admin",
    "feature flags",
    "email templates",
    "SSO callback",
    "invoice PDF rendering",
    "websocket reconnect",
    "cron drift",
]
_VERBS = ["fix", "refactor", "speed up", "add tests for", "debug", "migrate", "harden", "document"]
_FILES = [
    "app/models.py",
    "app/views.py",
    "app/services/billing.py",
    "app/tasks.py",
    "tests/test_billing.py",
    "tests/test_api.py",
    "config/settings.py",
    "app/serializers.py",
    "app/selectors.py",
    "scripts/deploy.sh",
    "frontend/src/api.ts",
    "frontend/src/components/Table.tsx",
    "Dockerfile",
    ".github/workflows/ci.yml",
]
_IDENT = [
    "invoice",
    "customer",
    "retry_count",
    "payload",
    "session",
    "queryset",
    "cursor",
    "token",
    "amount",
    "created_at",
    "status",
    "result",
    "handler",
    "event",
    "record",
    "batch",
    "limit",
    "offset",
]


def _code(rng: random.Random, lines: int) -> str:
    out = []
    indent = 0
    for _ in range(lines):
        kind = rng.random()
        a, b, c = rng.sample(_IDENT, 3)
        if kind < 0.15:
            out.append("    " * indent + f"def {a}_{b}({c}, *, {a}=None):")
            indent = min(indent + 1, 3)
        elif kind < 0.3:
            out.append("    " * indent + f"if {a}.{b} is None or {c} > {rng.randint(1, 500)}:")
            indent = min(indent + 1, 3)
        elif kind < 0.4 and indent:
            out.append("    " * indent + f"return {a}")
            indent -= 1
        elif kind < 0.55:
            out.append("    " * indent + f"{a} = {b}.filter({c}__gte={rng.randint(0, 99)}).order_by('-{c}')")
        elif kind < 0.7:
            out.append("    " * indent + f"logger.info('{a} %s {b} %s', {a}.id, {c})")
        else:
            out.append("    " * indent + f"{a}.{b} = {c}.get('{rng.choice(_IDENT)}', {rng.randint(0, 9)})")
    return "\n".join(out)


def _pytest_output(rng: random.Random, failing: bool) -> str:
    n = rng.randint(20, 180)
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        f"collected {n} items",
        "",
    ]
    for f in rng.sample([*_FILES[4:6], "tests/test_models.py", "tests/test_tasks.py"], 3):
        lines.append(f"{f} " + "".join(rng.choice("....F" if failing else ".") for _ in range(rng.randint(10, 40))))
    if failing:
        a, b = rng.sample(_IDENT, 2)
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"___________________________ test_{a}_{b} ___________________________",
            f"    def test_{a}_{b}(db, client):",
            f">       assert response.json()['{a}'] == {rng.randint(1, 99)}",
            f"E       AssertionError: assert None == {rng.randint(1, 99)}",
            f"E        +  where None = <Response [200]>.json()['{a}']",
            "",
            f"tests/test_api.py:{rng.randint(10, 400)}: AssertionError",
            f"===================== 1 failed, {n - 1} passed in {rng.uniform(1, 40):.2f}s =====================",
        ]
    else:
        lines.append(f"======================== {n} passed in {rng.uniform(1, 40):.2f}s ========================")
    return "\n".join(lines)


def _diff(rng: random.Random, path: str) -> str:
    start = rng.randint(1, 300)
    body = _code(rng, rng.randint(4, 12)).splitlines()
    removed = ["-" + line for line in body[: len(body) // 3]]
    added = ["+" + line for line in body[len(body) // 3 :]]
    return "\n".join(
        [f"--- a/{path}", f"+++ b/{path}", f"@@ -{start},{len(removed)} +{start},{len(added)} @@", *removed, *added]
    )


def make_trace(rng: random.Random, *, topic: int, target_bytes: int, memory_ids: list[str] | None = None) -> str:
    area = _AREAS[topic % len(_AREAS)]
    task = f"{rng.choice(_VERBS)} the {area} [topic {topic}]"
    parts = [
        f"User: {task}",
        "",
        f"Assistant: I'll start by reading the relevant code and reproducing the problem with {area}.",
    ]
    if memory_ids:
        parts.append("Tool call: reasoningbank.search_memories(query=" + repr(area) + ")")
        parts.append("Tool result: " + ", ".join(f"{mid} (confidence 0.8)" for mid in memory_ids))
    step = 0
    while sum(len(p) + 1 for p in parts) < target_bytes:
        step += 1
        path = rng.choice(_FILES)
        choice = rng.random()
        if choice < 0.35:
            code = _code(rng, rng.randint(15, 60))
            parts += [f"Tool call: read_file(path={path!r})", "Tool result:", "```", code, "```"]
        elif choice < 0.6:
            failing = rng.random() < 0.5
            parts += ["Tool call: bash(command='pytest -x -q')", "Tool result:", _pytest_output(rng, failing)]
        elif choice < 0.8:
            diff = _diff(rng, path)
            parts += [f"Tool call: edit_file(path={path!r})", "Tool result: applied", "```diff", diff, "```"]
        elif choice < 0.9:
            secret = "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
            parts += ["Tool call: bash(command='env | grep AWS')", f"Tool result: AWS_ACCESS_KEY_ID={secret}"]
        else:
            parts.append(f"Tool call: bash(command='git log --oneline -n 5 -- {path}')")
            parts.append(
                "Tool result:\n"
                + "\n".join(
                    f"{rng.getrandbits(28):07x} {rng.choice(_VERBS)} {rng.choice(_IDENT)} handling" for _ in range(5)
                )
            )
        a, b = rng.sample(_IDENT, 2)
        parts.append(
            f"Assistant: Step {step}: the {a} is not propagated to {b} in {path}; "
            f"{rng.choice(['checking the caller next', 'adding a regression test', 'running the suite'])}."
        )
    parts += ["", f"Assistant: Done. The {area} issue is fixed and the full test suite passes."]
    return "\n".join(parts)
