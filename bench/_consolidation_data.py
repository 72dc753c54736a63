"""Synthetic memory banks with controlled near-duplicate structure for bench/consolidate.py.

Vectors are generated directly with numpy (not with an embedder): random unit vectors in
EMBEDDING_DIMENSIONS are almost orthogonal (cos ~ N(0, 1/sqrt(d))), and a vector perturbed as
``cos·base + sqrt(1 − cos²)·noise⊥`` has exactly the requested cosine to ``base``. That gives:

- topic clusters of 2–6 paraphrases whose pairwise cosine is 0.82–0.92 (average linkage ≥ 0.8
  groups them; the pairs also fall in the 0.7–0.95 judge band);
- duplicates of existing memories at cosine 0.965–0.998 (groups ≥ 0.95, merged without an LLM),
  some memories with two duplicates;
- "related" pairs at 0.72–0.79 (judge candidates, never clustered);
- singletons (everything else, the majority).

Texts follow the same structure (paraphrased titles within a topic, copied-and-edited text for
duplicates) so synthesis prompts look like the real thing. Generation is seeded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_SUBJECTS = [
    "postgres migrations",
    "CI caching",
    "flaky tests",
    "API pagination",
    "webhook retries",
    "docker layers",
    "timezone handling",
    "N+1 queries",
    "feature flags",
    "rate limiting",
    "secret rotation",
    "schema drift",
    "background jobs",
    "search ranking",
    "CSV exports",
    "TLS certificates",
    "log sampling",
    "memory leaks",
    "dependency pinning",
    "SSO callbacks",
]
_ACTIONS = [
    "run",
    "check",
    "pin",
    "split",
    "retry",
    "cache",
    "index",
    "batch",
    "log",
    "bisect",
    "mock",
    "profile",
    "vacuum",
    "lock",
    "stream",
    "validate",
]
_OBJECTS = [
    "the migration",
    "the worker",
    "the query",
    "the fixture",
    "the container",
    "the token",
    "the job",
    "the endpoint",
    "the index",
    "the test",
    "the cache key",
    "the cron entry",
    "the payload",
]
_TITLE_FORMS = [
    "{s}: {a} {o} first",
    "How to {a} {o} ({s})",
    "{s} — always {a} {o}",
    "Tip: {a} {o} for {s}",
    "Checklist for {s}: {a} {o}",
]


@dataclass
class Dataset:
    vectors: np.ndarray  # (n, d) float32, unit rows
    titles: list[str]
    descriptions: list[str]
    contents: list[str]
    tags: list[list[str]]
    kinds: list[str]
    structure: dict[str, int]


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _perturb(rng: np.random.Generator, base: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """Rows at exactly cosine ``cos`` (per row) from the unit rows of ``base``."""
    noise = _unit(rng, base.shape[0], base.shape[1])
    noise -= np.sum(noise * base, axis=1, keepdims=True) * base
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    cos = cos.astype(np.float32)[:, None]
    out = cos * base + np.sqrt(1 - cos * cos) * noise
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _sentence(rng: np.random.Generator, subject: str) -> str:
    a, o = rng.choice(_ACTIONS), rng.choice(_OBJECTS)
    return f"When working on {subject}, {a} {o} before changing anything else, then {rng.choice(_ACTIONS)} it again."


def generate(
    n: int,
    d: int,
    *,
    seed: int = 0,
    duplicate_share: float = 0.12,
    clustered_share: float = 0.33,
    related_share: float = 0.06,
) -> Dataset:
    rng = np.random.default_rng(seed)
    n_dup = round(n * duplicate_share)
    n_base = n - n_dup
    n_clustered_target = round(n_base * clustered_share)
    n_related = round(n_base * related_share) // 2 * 2

    vectors: list[np.ndarray] = []
    titles, descriptions, contents, tags, kinds = [], [], [], [], []
    topic = 0

    def add_text(subject: str, form: str, a: str, o: str, topic_id: int, kind: str = "procedural") -> None:
        titles.append(form.format(s=subject, a=a, o=o)[:200])
        descriptions.append(f"Use when {a}ing {o} in {subject} (topic {topic_id}).")
        contents.append(" ".join(_sentence(rng, subject) for _ in range(int(rng.integers(3, 8)))))
        tags.append([subject.split()[0].lower(), f"topic-{topic_id}"])
        kinds.append(kind)

    # topic clusters of 2-6 paraphrases
    clustered = 0
    sizes = []
    while clustered < n_clustered_target:
        size = int(min(rng.choice([2, 2, 3, 3, 4, 5, 6]), n_clustered_target - clustered))
        if size < 2:
            break
        sizes.append(size)
        clustered += size
    centers = _unit(rng, len(sizes), d)
    pairwise = rng.uniform(0.82, 0.92, len(sizes))
    for k, size in enumerate(sizes):
        members = _perturb(rng, np.repeat(centers[k : k + 1], size, axis=0), np.full(size, np.sqrt(pairwise[k])))
        vectors.append(members)
        subject, a, o = _SUBJECTS[topic % len(_SUBJECTS)], rng.choice(_ACTIONS), rng.choice(_OBJECTS)
        for j in range(size):
            add_text(subject, _TITLE_FORMS[j % len(_TITLE_FORMS)], a, o, topic)
        topic += 1

    # related pairs (0.72-0.79) and singletons
    n_single = n_base - clustered - n_related
    if n_related:
        first = _unit(rng, n_related // 2, d)
        second = _perturb(rng, first, rng.uniform(0.72, 0.79, n_related // 2))
        vectors.append(np.stack([first, second], axis=1).reshape(-1, d))
        for _ in range(n_related // 2):
            subject, a, o = _SUBJECTS[topic % len(_SUBJECTS)], rng.choice(_ACTIONS), rng.choice(_OBJECTS)
            add_text(subject, _TITLE_FORMS[0], a, o, topic)
            add_text(subject, _TITLE_FORMS[1], rng.choice(_ACTIONS), o, topic)
            topic += 1
    vectors.append(_unit(rng, n_single, d))
    n_episodic = 0
    for _ in range(n_single):
        subject, a, o = _SUBJECTS[topic % len(_SUBJECTS)], rng.choice(_ACTIONS), rng.choice(_OBJECTS)
        episodic = rng.random() < 0.05
        n_episodic += episodic
        add_text(
            subject,
            _TITLE_FORMS[int(rng.integers(len(_TITLE_FORMS)))],
            a,
            o,
            topic,
            "episodic" if episodic else "procedural",
        )
        topic += 1

    base = np.concatenate(vectors)
    # duplicates: copies of random base memories (some get two), cosine 0.965-0.998
    sources = rng.choice(n_base, size=n_dup, replace=True)
    dups = _perturb(rng, base[sources], rng.uniform(0.965, 0.998, n_dup))
    for s in sources.tolist():
        titles.append(titles[s])
        descriptions.append(descriptions[s])
        contents.append(contents[s] + " (noted again)")
        tags.append(list(tags[s]))
        kinds.append(kinds[s])
    all_vectors = np.concatenate([base, dups]).astype(np.float32)
    order = rng.permutation(n)  # insertion order must not reveal the structure
    return Dataset(
        vectors=all_vectors[order],
        titles=[titles[i] for i in order],
        descriptions=[descriptions[i] for i in order],
        contents=[contents[i] for i in order],
        tags=[tags[i] for i in order],
        kinds=[kinds[i] for i in order],
        structure={
            "memories": n,
            "clusters": len(sizes),
            "clustered_memories": clustered,
            "related_pairs": n_related // 2,
            "singletons": n_single,
            "episodic_singletons": n_episodic,
            "duplicates": n_dup,
            "duplicated_sources": len(set(sources.tolist())),
        },
    )
