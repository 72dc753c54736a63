"""Consolidation: its schedule, the similarity thresholds per embedder, the judge, failure backoff, the
promotion ladder and institutional promotion, and the write gate's near-copy threshold that follows them."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from reasoningbank.env import env_bool, env_duration, env_float, env_int
from reasoningbank.settings.ai import EMBEDDER

# --- Consolidation (docs/consolidation.md) ---------------------------------------------------
CONSOLIDATION_SCHEDULER_ENABLED = env_bool("CONSOLIDATION_SCHEDULER_ENABLED", True)
CONSOLIDATION_SCHEDULER_INTERVAL = env_duration("CONSOLIDATION_SCHEDULER_INTERVAL", "24h")
# Similarity thresholds per embedder (docs/consolidation.md#thresholds), calibrated on
# bench/data/consolidation_set.jsonl by bench/consolidation_quality.py (bench/README.md): (duplicate
# merge, cluster synthesis, lowest similarity the contradiction judge reads). The uncalibrated 0.95 /
# 0.8 / 0.7 were written for other embedders; an embedder without a calibration keeps them. A pair with
# conflict cues is never merged whatever its similarity (consolidation/cues.py).
CONSOLIDATION_CALIBRATED_THRESHOLDS = {
    "hashing": (0.93, 0.58, 0.49),
    "minilm": (0.98, 0.76, 0.56),
    # the same model with int8 weights has its own similarities: the closest unrelated pairs are a little
    # higher (cluster 0.81, not 0.76); duplicates a little lower, but at 0.97 a contradiction no cue word
    # catches (two prefetch multipliers, 0.974) merged, so 0.98 as minilm (bench/README.md)
    "minilm-onnx": (0.98, 0.81, 0.56),
    "sentence-transformers": (0.98, 0.76, 0.56),  # all-MiniLM-L6-v2 unless EMBEDDING_MODEL says otherwise
    "openai": (0.95, 0.8, 0.7),
}
_duplicate, _cluster, _judge_from = CONSOLIDATION_CALIBRATED_THRESHOLDS[EMBEDDER]
CONSOLIDATION_DUPLICATE_THRESHOLD = env_float("CONSOLIDATION_DUPLICATE_THRESHOLD", _duplicate, minimum=0.5, maximum=1)
CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD = env_float(
    "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD", _cluster, minimum=0.5, maximum=0.99
)
CONSOLIDATION_JUDGE_MIN_SIMILARITY = env_float(
    "CONSOLIDATION_JUDGE_MIN_SIMILARITY", _judge_from, minimum=0.3, maximum=1
)
# pairs the LLM judge reads per run (batched: CONSOLIDATION_JUDGE_BATCH_PAIRS a call); pairs beyond it
# wait for the next run and are not merged meanwhile
CONSOLIDATION_MAX_JUDGED_PAIRS = env_int("CONSOLIDATION_MAX_JUDGED_PAIRS", 200, minimum=1, maximum=10_000)
# pairs the judge reads in one call (one verdict each, every verdict tied to its pair by ids); 1 asks
# the supersession check and the contradiction judge per pair (two calls), for a model that cannot
# answer a list reliably (docs/consolidation.md#the-judge)
CONSOLIDATION_JUDGE_BATCH_PAIRS = env_int("CONSOLIDATION_JUDGE_BATCH_PAIRS", 20, minimum=1, maximum=100)
# clusters synthesised in one call, each answer carrying the cluster's memory and its summary (tied to
# its cluster by ids); 1 asks a synthesis and a summary per cluster (two calls), for a model that cannot
# answer a list reliably (docs/consolidation.md#batched-synthesis)
CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS = env_int("CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS", 5, minimum=1, maximum=20)
if not CONSOLIDATION_JUDGE_MIN_SIMILARITY < CONSOLIDATION_DUPLICATE_THRESHOLD:
    raise ImproperlyConfigured("CONSOLIDATION_JUDGE_MIN_SIMILARITY must be below CONSOLIDATION_DUPLICATE_THRESHOLD")
# the write gate: a record this alike (cosine) to an active memory of the same place, outcome and kind,
# with no differing numbers, negations or opposite words, is answered with that memory ("duplicate of
# …"); never below the duplicate merge (a copy the run would not merge is no copy); 1 = off
WRITE_GATE_NEAR_COPY_SIMILARITY = env_float(
    "WRITE_GATE_NEAR_COPY_SIMILARITY", max(0.97, CONSOLIDATION_DUPLICATE_THRESHOLD), minimum=0.8, maximum=1
)
CONSOLIDATION_RUN_TIMEOUT = env_duration("CONSOLIDATION_RUN_TIMEOUT", "10m")
# a queued run no worker claimed within this is failed, so a dead worker never blocks a project
CONSOLIDATION_QUEUE_TIMEOUT = env_duration("CONSOLIDATION_QUEUE_TIMEOUT", "15m")
# a project whose runs keep failing: its automatic runs (schedule, on-demand) wait this long after the
# first failure in a row, twice as long after each next one, at most the maximum; a completed run resets
# it (docs/operations.md)
CONSOLIDATION_FAILURE_BACKOFF = env_duration("CONSOLIDATION_FAILURE_BACKOFF", "5m")
CONSOLIDATION_FAILURE_BACKOFF_MAX = env_duration("CONSOLIDATION_FAILURE_BACKOFF_MAX", "24h")
if CONSOLIDATION_FAILURE_BACKOFF_MAX < CONSOLIDATION_FAILURE_BACKOFF:
    raise ImproperlyConfigured("CONSOLIDATION_FAILURE_BACKOFF_MAX must be at least CONSOLIDATION_FAILURE_BACKOFF")
CONSOLIDATION_ON_DEMAND_THRESHOLD = env_int("CONSOLIDATION_ON_DEMAND_THRESHOLD", 20, minimum=1)
CONSOLIDATION_LLM_CONCURRENCY = env_int("CONSOLIDATION_LLM_CONCURRENCY", 10, minimum=1, maximum=64)
# scheduled runs send their LLM calls through the provider's batch API (about half the price) and wait for
# it, up to a day (docs/llm-spend.md#batch-mode); off: every run calls directly
CONSOLIDATION_LLM_BATCH = env_bool("CONSOLIDATION_LLM_BATCH", False)
# consolidated memories without a summary (older ones, failed calls) summarised per run, besides the new
CONSOLIDATION_SUMMARY_CATCH_UP = env_int("CONSOLIDATION_SUMMARY_CATCH_UP", 20, minimum=0, maximum=500)
# The promotion ladder (docs/consolidation.md#the-promotion-ladder, consolidation/ladder.py): its criteria.
# semantic → episodic: a fact more confident than this and older than this age is promoted in place ...
CONSOLIDATION_LADDER_EPISODIC_MIN_CONFIDENCE = env_float(
    "CONSOLIDATION_LADDER_EPISODIC_MIN_CONFIDENCE", 0.8, minimum=0, maximum=1
)
CONSOLIDATION_LADDER_EPISODIC_MIN_AGE = env_duration("CONSOLIDATION_LADDER_EPISODIC_MIN_AGE", "2h")
# ... and this many similar facts created within the window become one new episodic memory (a pattern)
CONSOLIDATION_LADDER_PATTERN_MIN_FACTS = env_int("CONSOLIDATION_LADDER_PATTERN_MIN_FACTS", 3, minimum=2)
CONSOLIDATION_LADDER_PATTERN_WINDOW = env_duration("CONSOLIDATION_LADDER_PATTERN_WINDOW", "7d")
# episodic → procedural: this many similar episodic memories within the window, more successes than
# failures and an average success above this become one new procedural memory
CONSOLIDATION_LADDER_PROCEDURAL_MIN_OBSERVATIONS = env_int(
    "CONSOLIDATION_LADDER_PROCEDURAL_MIN_OBSERVATIONS", 3, minimum=2
)
CONSOLIDATION_LADDER_PROCEDURAL_WINDOW = env_duration("CONSOLIDATION_LADDER_PROCEDURAL_WINDOW", "30d")
CONSOLIDATION_LADDER_PROCEDURAL_MIN_SUCCESS = env_float(
    "CONSOLIDATION_LADDER_PROCEDURAL_MIN_SUCCESS", 0.6, minimum=0, maximum=1
)
# "similar" for both patterns: a fixed cosine would mean different things per embedder, so it follows
# the calibrated cluster threshold; never below the neighbour graph's floor (the judge's lowest
# similarity)
CONSOLIDATION_LADDER_SIMILARITY = env_float("CONSOLIDATION_LADDER_SIMILARITY", _cluster, minimum=0.3, maximum=1)
if CONSOLIDATION_LADDER_SIMILARITY < CONSOLIDATION_JUDGE_MIN_SIMILARITY:
    raise ImproperlyConfigured(
        "CONSOLIDATION_LADDER_SIMILARITY must be at least CONSOLIDATION_JUDGE_MIN_SIMILARITY "
        "(the neighbour graph's floor)"
    )
# the retry of a cycle's transaction that hit a serialization failure or a deadlock: this many
# attempts in all, waiting this long times the attempt number in between
CONSOLIDATION_LADDER_ATTEMPTS = env_int("CONSOLIDATION_LADDER_ATTEMPTS", 3, minimum=1, maximum=10)
CONSOLIDATION_LADDER_RETRY_DELAY = env_duration("CONSOLIDATION_LADDER_RETRY_DELAY", "5s")
# institutional promotion (docs/consolidation.md#institutional-promotion; consolidation/promotion/): a
# procedural memory whose similar twins (cosine >= CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD) all
# have at least this confidence in at least this many projects of a team is proposed for the team; in
# that many teams, for the org (at least 2: one place agreeing with itself is no consensus)
PROMOTION_MIN_PROJECTS = env_int("PROMOTION_MIN_PROJECTS", 2, minimum=2, maximum=1000)
PROMOTION_MIN_CONFIDENCE = env_float("PROMOTION_MIN_CONFIDENCE", 0.8, minimum=0, maximum=1)
