"""Shared helpers for the benchmark scripts in bench/: environment, Django set-up, a real uvicorn
server on a free loopback port, latency statistics and a description of the machine.

Benchmarks run against a dedicated embedded PostgreSQL (``RB_DATA_DIR=<repo>/.data/bench``,
git-ignored) so they never touch development or test data. ``configure_environment()`` must run
before anything imports Django settings.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH_DATA_DIR = REPO / ".data" / "bench"
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def configure_environment() -> dict[str, str]:
    """Defaults for a benchmark process (kept when already set); returns what was chosen."""
    os.environ.setdefault("RB_DATA_DIR", str(BENCH_DATA_DIR))
    # measured as deployed: DEBUG off (Django's debug cursor formats and keeps every statement)
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
    os.environ.setdefault("LOG_LEVEL", "warning")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return {name: os.environ[name] for name in ("RB_DATA_DIR", "DEBUG", "DJANGO_SETTINGS_MODULE")}


def django_setup(*, migrate: bool = True) -> None:
    configure_environment()
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)


# --- statistics ------------------------------------------------------------------------------------


@dataclass
class Latency:
    """Latency figures in milliseconds for one measured series."""

    n: int
    mean: float
    p50: float
    p90: float
    p99: float
    min: float
    max: float

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Latency:
        import numpy as np

        a = np.asarray(samples_ms, dtype=float)
        if a.size == 0:
            return cls(0, *([float("nan")] * 6))
        p50, p90, p99 = np.percentile(a, [50, 90, 99])
        return cls(int(a.size), float(a.mean()), float(p50), float(p90), float(p99), float(a.min()), float(a.max()))

    def as_dict(self) -> dict[str, float]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


# --- a real server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def uvicorn_server(
    app: str = "reasoningbank.asgi:application", *, workers: int = 1, startup_timeout: float = 60.0
) -> Iterator[tuple[str, int]]:
    """Start ``uvicorn app`` on 127.0.0.1 with a free port (same environment as this process) and
    yield (base URL, pid) once ``/healthz`` answers; stop it (by its own pid) afterwards."""
    import httpx2

    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    log_path = RESULTS_DIR / f"uvicorn-{port}.log"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {proc.returncode}; see {log_path}")
            try:
                if httpx2.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not become healthy in {startup_timeout}s; see {log_path}")
            time.sleep(0.2)
        yield base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
        if log_path.stat().st_size == 0:
            log_path.unlink()


# --- CPU accounting (robust against other load on the machine) -----------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stat(pid: int) -> tuple[int, float, float]:
    """(ppid, own CPU seconds, reaped children's CPU seconds) of a process, from /proc."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime) / _TICK, (cutime + cstime) / _TICK


def process_tree_cpu(root: int) -> float:
    """CPU seconds used so far by ``root``, its live descendants and every child it has reaped."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid, own, reaped = _proc_stat(int(entry.name))
            children.setdefault(ppid, []).append(int(entry.name))
            stats[int(entry.name)] = (own, reaped)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        own, reaped = stats.get(pid, (0.0, 0.0))
        total += own + reaped
        todo.extend(children.get(pid, []))
    return total


def postmaster_pid() -> int | None:
    """The embedded PostgreSQL server of RB_DATA_DIR (None with DATABASE_URL or when unknown)."""
    if os.environ.get("DATABASE_URL"):
        return None
    path = Path(os.environ.get("RB_DATA_DIR", str(BENCH_DATA_DIR))) / "pg" / "postmaster.pid"
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU seconds of this process, an optional server process tree and the PostgreSQL server,
    between ``start()`` and ``stop()``; ``per_op_ms(n)`` divides by ``n`` operations."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid
        self.pg_pid = postmaster_pid()
        self.used: dict[str, float] = {}

    def _snapshot(self) -> dict[str, float]:
        t = os.times()
        snap = {"client": t.user + t.system}
        if self.server_pid:
            snap["server"] = process_tree_cpu(self.server_pid)
        if self.pg_pid:
            snap["postgres"] = process_tree_cpu(self.pg_pid)
        return snap

    def start(self) -> CpuMeter:
        self._start = self._snapshot()
        return self

    def stop(self) -> CpuMeter:
        end = self._snapshot()
        self.used = {k: end[k] - self._start[k] for k in end}
        return self

    def per_op_ms(self, n: int) -> dict[str, float]:
        out = {k: round(v * 1000 / max(n, 1), 2) for k, v in self.used.items()}
        out["total"] = round(sum(self.used.values()) * 1000 / max(n, 1), 2)
        return out


# --- the machine -----------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    return info


def revision() -> str | None:
    """The checked-out commit, read from .git (no git command), for the results file."""
    try:
        head = (REPO / ".git" / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        path = REPO / ".git" / ref
        if path.exists():
            return path.read_text().strip()
        for line in (REPO / ".git" / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        pass
    return None


def postgres_info() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        settings_ = {}
        for name in (
            "shared_buffers",
            "work_mem",
            "effective_cache_size",
            "max_parallel_workers_per_gather",
            "synchronous_commit",
            "fsync",
            "random_page_cost",
        ):
            cursor.execute(f"SHOW {name}")
            settings_[name] = cursor.fetchone()[0]
    return {"version": version.split(" on ")[0], "pgvector": row[0] if row else None, **settings_}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


# --- a synthetic but realistic corpus ---------------------------------------------------------------
# Memories are built from engineering topics (languages, databases, testing, deployment, error
# handling, ...). About a third of them are near-duplicates of an earlier memory (same topic, a
# word or a step changed), like a real bank before consolidation; about one in six mentions a
# rare keyword (an error code or a less common tool) that the full-text leg can find exactly.
# Everything is derived from the memory's index, so a corpus of N is the first N of a larger one.

LANGUAGES = [
    "Python",
    "Go",
    "Rust",
    "TypeScript",
    "JavaScript",
    "Java",
    "Kotlin",
    "Ruby",
    "C#",
    "Elixir",
    "Scala",
    "PHP",
    "Swift",
    "C++",
]
DATABASES = [
    "PostgreSQL",
    "MySQL",
    "SQLite",
    "Redis",
    "MongoDB",
    "Elasticsearch",
    "DynamoDB",
    "Cassandra",
    "ClickHouse",
    "Kafka",
]
FRAMEWORKS = [
    "Django",
    "FastAPI",
    "Flask",
    "Rails",
    "Spring Boot",
    "Express",
    "Next.js",
    "React",
    "Vue",
    "Gin",
    "Actix",
    "Phoenix",
    "Laravel",
    "ASP.NET",
]
TOOLS = [
    "Docker",
    "Kubernetes",
    "Helm",
    "Terraform",
    "Ansible",
    "GitHub Actions",
    "GitLab CI",
    "Jenkins",
    "Nginx",
    "Envoy",
    "Prometheus",
    "Grafana",
    "Sentry",
    "OpenTelemetry",
]
# (area, subjects, advice to follow, pitfalls to avoid)
AREAS: list[tuple[str, list[str], list[str], list[str]]] = [
    (
        "testing",
        [
            "flaky integration tests",
            "unit tests for the service layer",
            "shared test fixtures",
            "mocking HTTP calls",
            "snapshot tests",
            "property-based tests",
            "database tests",
            "end-to-end browser tests",
            "a slow test suite",
            "tests that depend on the clock",
        ],
        [
            "isolate each test in a transaction that rolls back",
            "freeze the clock instead of sleeping",
            "build data with factories instead of shared fixtures",
            "run the suite in parallel with one database per worker",
            "mock at the HTTP boundary, not inside the client",
            "seed the random generator so failures reproduce",
            "assert on behaviour, not on private attributes",
            "tag slow tests and run them in a separate job",
        ],
        [
            "sleeping for a fixed time to wait for async work",
            "sharing mutable fixtures between tests",
            "mocking the code under test",
            "depending on test execution order",
            "hitting real third-party APIs in CI",
        ],
    ),
    (
        "error handling",
        [
            "connection timeouts",
            "retries on transient errors",
            "unhandled exceptions in background jobs",
            "error wrapping",
            "panics in worker goroutines",
            "partial failures in batch jobs",
            "idempotent retries",
            "circuit breakers",
            "user-facing error messages",
            "dead-letter queues",
        ],
        [
            "retry with exponential backoff and jitter",
            "wrap errors with context before returning them",
            "make handlers idempotent with a request key",
            "set a deadline on every outbound call",
            "log the cause once at the boundary",
            "send poison messages to a dead-letter queue after three attempts",
            "fail fast on configuration errors at start-up",
            "return a stable error code with every message",
        ],
        [
            "swallowing exceptions with a bare except",
            "retrying non-idempotent requests blindly",
            "logging the same error at every layer",
            "retrying without a cap",
            "catching errors only to re-raise them",
        ],
    ),
    (
        "databases",
        [
            "N+1 queries",
            "missing indexes",
            "long-running migrations",
            "connection pool exhaustion",
            "deadlocks between transactions",
            "slow full-text search",
            "bulk inserts",
            "pagination over large tables",
            "schema changes on big tables",
            "replication lag on read replicas",
        ],
        [
            "add a composite index that matches the filter and the sort",
            "batch related lookups in one query",
            "add the column as nullable, backfill in batches, then add the constraint",
            "use keyset pagination instead of OFFSET",
            "keep the pool small and queue requests",
            "take row locks in a consistent order",
            "load bulk data with COPY",
            "read your own writes from the primary",
        ],
        [
            "running OFFSET pagination on millions of rows",
            "holding a transaction open across a network call",
            "adding a NOT NULL column with a default on a huge table",
            "opening a connection per request",
            "using SELECT * in hot paths",
        ],
    ),
    (
        "deployment",
        [
            "zero-downtime deploys",
            "rollback of a bad release",
            "container image size",
            "health checks",
            "configuration drift between environments",
            "secrets in CI",
            "blue-green deployment",
            "canary releases",
            "database migrations during a deploy",
            "Helm chart upgrades",
        ],
        [
            "run migrations before switching traffic",
            "build slim images with multi-stage builds",
            "separate liveness from readiness probes",
            "pin base images by digest",
            "keep secrets in the CI secret store, never in the repository",
            "ship behind feature flags instead of long-lived branches",
            "roll out to five percent first and watch errors",
            "make every migration backwards compatible with the previous release",
        ],
        [
            "deploying schema and code changes in one step",
            "using the latest tag for base images",
            "restarting all replicas at once",
            "baking secrets into images",
            "skipping the staging smoke test",
        ],
    ),
    (
        "performance",
        [
            "memory leaks",
            "slow API endpoints",
            "cache invalidation",
            "CPU-bound request handlers",
            "large JSON payloads",
            "cold starts",
            "hot loops",
            "garbage collection pauses",
            "p99 latency spikes",
        ],
        [
            "profile before optimising",
            "cache at the edge with short TTLs",
            "stream large responses",
            "move CPU-bound work to a worker queue",
            "batch database writes",
            "precompute aggregates nightly",
            "reuse HTTP connections with a shared client",
            "set memory limits and watch the RSS",
        ],
        [
            "optimising without a profile",
            "caching without an invalidation plan",
            "serialising huge objects per request",
            "creating a new HTTP client per call",
            "unbounded in-process caches",
        ],
    ),
    (
        "security",
        [
            "SQL injection",
            "CSRF on forms",
            "leaked API tokens",
            "rate limiting",
            "vulnerable dependencies",
            "XSS in templates",
            "JWT expiry",
            "password hashing",
            "tenant isolation",
            "audit logging",
        ],
        [
            "always use parameterised queries",
            "store only a hash of API tokens",
            "rotate credentials on a schedule",
            "rate limit by token and by IP",
            "scan dependencies in CI",
            "escape output by default in templates",
            "scope every query by tenant in one access layer",
            "hash passwords with argon2 or bcrypt",
        ],
        [
            "building SQL with string formatting",
            "logging tokens or passwords",
            "long-lived JWTs without revocation",
            "trusting client-side validation",
            "checking tenant access in each view by hand",
        ],
    ),
    (
        "concurrency",
        [
            "race conditions",
            "deadlocks",
            "thread pool starvation",
            "blocking calls inside async code",
            "goroutine leaks",
            "shared mutable state",
            "background job overlap",
            "lock contention",
        ],
        [
            "use a select-for-update or an advisory lock for the critical section",
            "run blocking calls in a thread pool from async code",
            "cancel goroutines with a context",
            "give each job a unique key so two workers never run it at once",
            "prefer message passing to shared state",
            "bound every queue and worker pool",
        ],
        [
            "calling blocking I/O on the event loop",
            "starting goroutines without a way to stop them",
            "check-then-act without a lock",
            "holding a lock while doing I/O",
            "unbounded worker pools",
        ],
    ),
    (
        "api design",
        [
            "REST pagination",
            "API versioning",
            "webhook delivery",
            "GraphQL N+1 resolvers",
            "gRPC deadlines",
            "error responses",
            "idempotency keys",
            "rate limit headers",
            "OpenAPI schemas",
        ],
        [
            "return cursors instead of page numbers for large lists",
            "version the API in the path",
            "sign webhooks and retry deliveries with backoff",
            "use dataloaders to batch resolvers",
            "propagate deadlines across services",
            "return errors as a stable JSON shape with a code",
            "accept an Idempotency-Key header on POST",
            "generate clients from the OpenAPI schema",
        ],
        [
            "breaking response shapes without a new version",
            "returning HTML error pages from JSON APIs",
            "unbounded list endpoints",
            "webhooks without signatures",
            "leaking stack traces in error bodies",
        ],
    ),
    (
        "frontend",
        [
            "React re-renders",
            "hydration mismatches",
            "bundle size",
            "layout shifts",
            "form validation",
            "accessible modals",
            "state management",
            "image loading",
        ],
        [
            "memoise expensive components and stable callbacks",
            "render dates on the client only",
            "split bundles by route and lazy-load heavy widgets",
            "reserve space for images and ads",
            "validate on the server and mirror it on the client",
            "trap focus inside open modals",
            "keep server state in a query cache, not in a global store",
        ],
        [
            "storing derived state",
            "rendering timestamps during SSR",
            "importing a whole icon library",
            "disabling zoom on mobile",
            "putting everything in one global store",
        ],
    ),
    (
        "observability",
        [
            "structured logging",
            "distributed tracing",
            "alert fatigue",
            "metrics cardinality",
            "log sampling",
            "on-call runbooks",
            "SLO dashboards",
        ],
        [
            "log JSON with a request id on every line",
            "propagate trace context through queues",
            "alert on symptoms, not causes",
            "keep label values bounded",
            "sample debug logs but keep every error",
            "link every alert to a runbook",
        ],
        [
            "putting user ids in metric labels",
            "alerting on every error log line",
            "logging full request bodies",
            "dashboards nobody owns",
        ],
    ),
]
RARE_KEYWORDS = [
    "ECONNRESET",
    "EADDRINUSE",
    "ETIMEDOUT",
    "OOMKilled",
    "CrashLoopBackOff",
    "ERR_REQUIRE_ESM",
    "SIGSEGV",
    "SQLSTATE-40P01",
    "pgbouncer",
    "uvloop",
    "tokio",
    "sqlx",
    "alembic",
    "celery",
    "sidekiq",
    "pnpm",
    "esbuild",
    "vite",
    "mypy",
    "hypothesis",
    "testcontainers",
    "localstack",
    "wiremock",
    "gunicorn",
    "pydantic",
    "zod",
    "prisma",
    "knex",
    "hikaricp",
    "flyway",
    "liquibase",
    "istio",
    "linkerd",
    "argocd",
    "karpenter",
    "sops",
    "dependabot",
    "renovate",
    "pgvector",
    "debezium",
    "temporal",
    "nats",
    "rabbitmq",
    "memcached",
    "jaeger",
    "loki",
    "vector.dev",
    "k6",
    "locust",
    "bazel",
]
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
STEP_VERBS = ["First", "Then", "Next", "After that", "Finally", "Also", "If it still fails,"]


@dataclass
class MemoryText:
    title: str
    description: str
    content: str
    outcome: str
    tags: list[str]
    area: str


def _family_params(root: int) -> dict[str, Any]:
    import random

    rng = random.Random(root * 7919 + 17)
    area, subjects, advice, pitfalls = AREAS[rng.randrange(len(AREAS))]
    return {
        "area": area,
        "subject": rng.choice(subjects),
        "advice": rng.sample(advice, k=min(3, len(advice))),
        "pitfall": rng.choice(pitfalls),
        "language": rng.choice(LANGUAGES),
        "database": rng.choice(DATABASES),
        "framework": rng.choice(FRAMEWORKS),
        "tool": rng.choice(TOOLS),
        "success": rng.random() < 0.7,
    }


class Corpus:
    """Deterministic memory texts: ``text(i)`` depends only on ``i`` (and the namespace ``seed``)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._roots: list[int] = []

    def _root(self, i: int) -> int:
        import random

        while len(self._roots) <= i:
            j = len(self._roots)
            rng = random.Random((self.seed << 32) + j * 31 + 7)
            # ~35% near-duplicates of an earlier memory; the rest start a new family
            self._roots.append(self._roots[rng.randrange(j)] if j and rng.random() < 0.35 else j)
        return self._roots[i]

    def text(self, i: int, stack: Sequence[str] = ()) -> MemoryText:
        import random

        root = self._root(i)
        p = _family_params((self.seed << 32) + root)
        rng = random.Random((self.seed << 32) + i * 104729 + 3)
        language = p["language"]
        if stack and rng.random() < 0.5:
            language = rng.choice(stack)
        elif root != i and rng.random() < 0.3:  # a near-duplicate in another language
            language = rng.choice(LANGUAGES)
        advice = list(p["advice"])
        if root != i:
            rng.shuffle(advice)
        success = p["success"] if root == i or rng.random() < 0.85 else not p["success"]
        subject, db, fw, tool = p["subject"], p["database"], p["framework"], p["tool"]
        if success:
            title = rng.choice(["{a} to handle {s}", "Handle {s}: {a}", "{s} in {l}: {a}", "For {s}, {a}"])
            outcome = "success"
        else:
            title = rng.choice(["Avoid {p} ({s})", "Don't fix {s} by {p}", "{s} in {l}: avoid {p}"])
            outcome = "failure"
        title = title.format(a=advice[0], s=subject, l=language, p=p["pitfall"])
        title = (title[0].upper() + title[1:])[:200]
        description = (
            f"When working on {subject} in a {language} service that uses {fw} and {db}, deployed with {tool}."
        )
        steps = [f"{STEP_VERBS[k]} {a}." for k, a in enumerate(advice)]
        if not success:
            steps.insert(0, f"We tried {p['pitfall']} and it made {subject} worse.")
        if rng.random() < 0.4:
            steps.append(f"Check the {db} logs and the {tool} dashboards before changing anything.")
        if success and rng.random() < 0.6:
            steps.append(f"Avoid {p['pitfall']}: in {fw} it hides the real problem until production.")
        if rng.random() < 0.3:
            steps.append(f"Document the decision in the {p['area']} runbook so the next agent finds it.")
        rare = None
        if rng.random() < 0.16:
            # Zipf-like: the first rare keywords appear much more often than the last ones
            rare = RARE_KEYWORDS[min(int(rng.paretovariate(1.2)) - 1, len(RARE_KEYWORDS) - 1)]
            steps.append(f"This showed up as {rare} in the {language} logs.")
        if rng.random() < 0.02:
            steps.append(f"Incident reference INC-{(self.seed * 100_000 + i) % 99_991:05d}.")
        content = " ".join(steps)
        tags = [language.lower().replace(" ", "-"), p["area"].replace(" ", "-"), db.lower()]
        if rare:
            tags.append(rare.lower())
        return MemoryText(title, description, content, outcome, tags, p["area"])


QUERIES_BASE = [
    "how do I fix flaky integration tests",
    "retry transient errors with backoff in {l}",
    "N+1 queries in {f}",
    "zero downtime deploy with database migrations",
    "connection pool exhausted {d}",
    "pagination over a large {d} table",
    "memory leak in a {l} service",
    "rate limit API tokens",
    "deadlock between transactions in {d}",
    "slow test suite in CI",
    "blocking calls in async {l} code",
    "structured logging with request ids",
    "webhook delivery retries and signatures",
    "container image too big",
    "readiness vs liveness probes in {t}",
    "cache invalidation strategy",
    "mocking HTTP calls in tests",
    "schema change on a big table without downtime",
    "goroutine leak",
    "hydration mismatch in {f}",
    "SQL injection prevention in {f}",
    "p99 latency spikes after deploy",
    "bulk insert millions of rows into {d}",
    "idempotency key for POST requests",
    "alert fatigue on call",
    "canary release rollback",
    "tenant isolation in queries",
    "error wrapping best practices {l}",
    "keyset pagination",
    "feature flags instead of long-lived branches",
]


def search_queries(count: int, seed: int = 42) -> list[str]:
    """``count`` varied natural-language queries: templates over the corpus vocabulary, ~15% with a
    rare keyword, a few with a keyword that matches nothing."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < count:
        attempts += 1
        r = rng.random()
        if r < 0.15:
            kw = RARE_KEYWORDS[rng.randrange(len(RARE_KEYWORDS))]
            q = rng.choice(["{k} errors in production", "fix {k}", "{k} keeps failing in CI", "what to do about {k}"])
            q = q.format(k=kw)
        elif r < 0.18:
            q = rng.choice(["zxqv frobnicator handshake", "quuxbar telemetry sharding", "INC-00042 postmortem"])
        elif r < 0.60:
            _area, subjects, advice, _ = AREAS[rng.randrange(len(AREAS))]
            q = f"{rng.choice(advice)} for {rng.choice(subjects)}"
        else:
            q = rng.choice(QUERIES_BASE).format(
                l=rng.choice(LANGUAGES), d=rng.choice(DATABASES), f=rng.choice(FRAMEWORKS), t=rng.choice(TOOLS)
            )
        if q in seen and attempts < count * 20:
            continue
        seen.add(q)
        out.append(q)
    return out


# --- loading the corpus into the database ------------------------------------------------------------

LOAD_BATCH = 2000
# memory ids are deterministic so that a dataset can grow (top up) or shrink (drop the tail)
ID_PREFIX = {BENCH_ORG: "mem_bench_", NOISE_ORGS[0]: "mem_noise1_", NOISE_ORGS[1]: "mem_noise2_"}
ORG_SEED = {BENCH_ORG: 0, NOISE_ORGS[0]: 1, NOISE_ORGS[1]: 2}
NOISE_FRACTION = 0.05  # per noise org: two of them make 10% of N
# indexes dropped during a large load and rebuilt afterwards (much faster than row-by-row inserts)
BULK_INDEXES = ("memory_embedding_hnsw", "memory_search_gin")
DAY = 86400.0


def memory_id(org_slug: str, i: int) -> str:
    return f"{ID_PREFIX[org_slug]}{i:08d}"


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in vector) + "]"


_WORKER_CORPUS: dict[int, Corpus] = {}


def _generate_chunk(args: tuple[int, int, int, int, list[list[str]], float]) -> list[dict[str, Any]]:
    """Rows for memories ``start..stop`` of one org (runs in a worker process; no Django)."""
    import random

    seed, start, stop, dims, stacks, now = args
    corpus = _WORKER_CORPUS.setdefault(seed, Corpus(seed))
    from reasoningbank.ai.embedders import HashingEmbedder

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
        total = 2.0 + evidence  # prior strength 2 (memories.confidence.DEFAULT_PRIOR_STRENGTH) + evidence
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
    if dims:  # the hashing embedder: embed here, in the worker
        vectors = HashingEmbedder(dims).embed([row["embed_text"] for row in rows])
        for row, vector in zip(rows, vectors, strict=True):
            row["vector"] = _vector_text(vector)
    return rows


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


def memory_indexes_ensure(log: Any = print) -> float:
    """(Re)create any of the model's indexes missing from the table (after a bulk load, or after a
    load that was interrupted). Returns the seconds spent building."""
    from django.db import connection

    from memories.models import Memory

    present = _index_names_present()
    missing = [index for index in Memory._meta.indexes if index.name not in present]
    if not missing:
        return 0.0
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '2GB'")
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


def _bulk_indexes_drop(log: Any = print) -> None:
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
    _bulk_indexes_drop(log)  # deleting 100K rows from an HNSW graph is slow; rebuilding is not
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


def dataset_ensure(n: int, *, reset: bool = False, log: Any = print) -> dict[str, Any]:
    """Make the database hold exactly ``n`` bench memories plus 5% of ``n`` in each noise org.

    Idempotent: nothing is loaded when the counts already match; a smaller dataset is topped up,
    a larger one loses its tail. Large loads drop the HNSW and GIN indexes and rebuild them after.
    """
    from django.db import connection

    from memories.models import Memory
    from reasoningbank.ai.embedders import HashingEmbedder, embedder_from_settings

    started = time.perf_counter()
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
            _bulk_indexes_drop(log)
            memories_delete("organization_id = %s AND id >= %s", [orgs[slug].org.id, memory_id(slug, target)])
            changed = shrunk = True
            total = target
        plan[slug] = (total, target)
    to_load = sum(target - have for have, target in plan.values())
    load_seconds = 0.0
    if to_load:
        embedder = embedder_from_settings()
        dims = embedder.dimensions if isinstance(embedder, HashingEmbedder) else 0
        if to_load > 5000:
            _bulk_indexes_drop(log)
        _install_preformatted_vectors()
        now = time.time()
        t0 = time.perf_counter()
        done = 0
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes=max(1, min(2, os.cpu_count() or 1))) as pool:
            for slug, (have, target) in plan.items():
                if have >= target:
                    continue
                bo = orgs[slug]
                jobs = [
                    (ORG_SEED[slug], s, min(s + LOAD_BATCH, target), dims, bo.stacks, now)
                    for s in range(have, target, LOAD_BATCH)
                ]
                for rows in pool.imap(_generate_chunk, jobs):
                    if not dims:  # another embedder: embed in batches here
                        vectors = embedder.embed([row["embed_text"] for row in rows])
                        for row, vector in zip(rows, vectors, strict=True):
                            row["vector"] = _vector_text(vector)
                    Memory.objects.bulk_create(
                        [_memory_from_row(slug, bo, row, embedder.name) for row in rows], batch_size=LOAD_BATCH
                    )
                    done += len(rows)
                    rate = done / (time.perf_counter() - t0)
                    if done % 10_000 < LOAD_BATCH or done == to_load:
                        log(f"  loaded {done}/{to_load} memories ({rate:.0f}/s)")
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
        "bench_memories": n,
        "noise_memories": sum(targets[s] for s in NOISE_ORGS),
        "table_rows": table_rows,
        "table_size": table_size,
        "hnsw_size": hnsw_size,
        "loaded": to_load,
        "load_seconds": round(load_seconds, 1),
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
