"""A synthetic but realistic memory corpus, and natural-language queries over it (``search.py``,
``context.py``, the dataset loader ``_dataset.py``).

Memories are built from engineering topics (languages, databases, testing, deployment, error
handling, ...; ``_vocabulary.py``). About a third of them are near-duplicates of an earlier memory
(same topic, a word or a step changed), like a real bank before consolidation; about one in six
mentions a rare keyword (an error code or a less common tool) that the full-text leg can find
exactly. Everything is derived from the memory's index, so a corpus of N is the first N of a larger one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _vocabulary import AREAS, DATABASES, FRAMEWORKS, LANGUAGES, RARE_KEYWORDS, TOOLS

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


# Where a query says it happens. Half the queries carry one, so a run can draw thousands of distinct
# texts: a repeated text would be served from the embedder's query cache and hide the embedding's cost.
QUERY_QUALIFIERS = [
    " in our {l} service",
    " in a {l} codebase",
    " with {d}",
    " using {f}",
    " on {t}",
    " deployed with {t}",
    " in production",
    " in CI",
    " after the last deploy",
    " under load",
]


def search_queries(count: int, seed: int = 42) -> list[str]:
    """``count`` distinct natural-language queries: templates over the corpus vocabulary, ~15% with a
    rare keyword, a few with a keyword that matches nothing, half with a qualifier (where it happens).
    Distinct, so that no query is served from the query-embedding cache of a process that already
    embedded it; ``ValueError`` if the templates cannot give that many."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > count * 50:
            raise ValueError(f"the query templates gave only {len(out)} distinct queries, not {count}")
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
        if rng.random() < 0.5:
            q += rng.choice(QUERY_QUALIFIERS).format(
                l=rng.choice(LANGUAGES), d=rng.choice(DATABASES), f=rng.choice(FRAMEWORKS), t=rng.choice(TOOLS)
            )
        if q in seen:
            continue
        seen.add(q)
        out.append(q)
    return out
