"""Memories: search, the confidence lifecycle, SessionStart context, distillation, import and the write
gate's length floor (its near-copy threshold follows consolidation's, in consolidation.py)."""

from __future__ import annotations

from reasoningbank.env import env_bool, env_choice, env_duration, env_float, env_int
from reasoningbank.settings.ai import EMBEDDER

# --- Search (docs/search.md) -----------------------------------------------------------------
SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 20
SEARCH_MIN_CONFIDENCE = env_float("SEARCH_MIN_CONFIDENCE", 0.5, minimum=0, maximum=1)
# run the vector and full-text legs at once on two pooled connections (needs DB_POOL)
SEARCH_PARALLEL_LEGS = env_bool("SEARCH_PARALLEL_LEGS", True)
# results less similar than this are noise, not memories to inject (unless a keyword matched)
# (minilm puts unrelated texts at 0.05–0.2; dropping those changed nothing on bench/retrieval.py)
SEARCH_MIN_SIMILARITY = env_float(
    "SEARCH_MIN_SIMILARITY",
    0.2 if EMBEDDER in ("minilm", "minilm-onnx", "sentence-transformers") else 0.1,
    minimum=0,
    maximum=1,
)
# fusion of the vector and lexical (BM25) legs into one relevance: convex combination of their
# per-query normalised scores (the lexical leg's share) or reciprocal rank fusion (docs/search.md#fusion-one-relevance)
SEARCH_FUSION = env_choice("SEARCH_FUSION", "convex", ["convex", "rrf"])
SEARCH_LEXICAL_WEIGHT = env_float("SEARCH_LEXICAL_WEIGHT", 0.55, minimum=0, maximum=1)
# time-aware relevance (docs/search.md#time-aware-relevance): what a question asking "when" gives a memory
# that states a time, and a query naming a date, month or year a memory recorded then; 0 turns it off
SEARCH_TIME_WEIGHT = env_float("SEARCH_TIME_WEIGHT", 0.3, minimum=0, maximum=1)
# a memory whose anchored code changed since it was written ranks this much lower until re-verified
# (docs/code-memory.md#staleness); 1 leaves its rank alone
SEARCH_CODE_CHANGED_FACTOR = env_float("SEARCH_CODE_CHANGED_FACTOR", 0.7, minimum=0.01, maximum=1)
# where BM25's document frequencies come from: "auto" — PostgreSQL's planner statistics of the
# full-text column once the table has been analysed (no per-query cost; kept SEARCH_STATS_TTL seconds
# per process), exact capped counts within the caller's reach before that; "exact" — always counts
SEARCH_TERM_STATISTICS = env_choice("SEARCH_TERM_STATISTICS", "auto", ["auto", "exact"])
SEARCH_STATS_TTL = env_int("SEARCH_STATS_TTL", 300, minimum=0)
# a term in more memories than this is common: it scores, but does not pick lexical candidates (and
# exact statistics stop counting there)
SEARCH_TERM_DF_CAP = env_int("SEARCH_TERM_DF_CAP", 500, minimum=10)
SEARCH_COLLECTION_CAP = env_int("SEARCH_COLLECTION_CAP", 20000, minimum=100)
# a hit with the same text as a better one, or this much alike (cosine), is folded into it (listed
# in its `duplicates`); off: every near-identical memory is its own result
SEARCH_COLLAPSE_DUPLICATES = env_bool("SEARCH_COLLAPSE_DUPLICATES", True)
SEARCH_COLLAPSE_SIMILARITY = env_float("SEARCH_COLLAPSE_SIMILARITY", 0.95, minimum=0.5, maximum=1)
# the neighbour stage: the best hits bring in the memories recorded next to them and each relevance is
# blended with its best neighbour's (docs/search.md#neighbours); off: fusion's relevance alone
SEARCH_NEIGHBOURS = env_bool("SEARCH_NEIGHBOURS", True)
# returned hits below this fused relevance record no usage signal (ranking noise must not feed confidence)
SEARCH_USAGE_MIN_RELEVANCE = env_float("SEARCH_USAGE_MIN_RELEVANCE", 0.3, minimum=0, maximum=1)
# a memory put in an agent's context this many times since its last use (the hooks' recall, session start:
# impressions, which move no confidence) gets one usage-negative signal from the daily job; 0: never
# (docs/confidence.md#impressions-and-use)
IMPRESSIONS_UNUSED_DEMOTE = env_int("IMPRESSIONS_UNUSED_DEMOTE", 50, minimum=0)
# deep search (mode "deep") may ask the configured LLM for 1–3 focused queries, search each and fuse the
# rankings (docs/search.md#deep-search-rewriting-the-question): off by default, as it costs an LLM call; the
# call waits at most the timeout (no retries: a search does not back off), a rewrite is kept per organization
# for the TTL, and the rankings are fused by each memory's best relevance (max) or reciprocal ranks (rrf)
SEARCH_DEEP_REWRITE = env_bool("SEARCH_DEEP_REWRITE", False)
SEARCH_DEEP_REWRITE_TIMEOUT = env_float("SEARCH_DEEP_REWRITE_TIMEOUT", 5.0, minimum=0.5, maximum=60)
SEARCH_DEEP_REWRITE_PAUSE = env_float("SEARCH_DEEP_REWRITE_PAUSE", 30.0, minimum=0, maximum=3600)
SEARCH_DEEP_REWRITE_CACHE_TTL = env_duration("SEARCH_DEEP_REWRITE_CACHE_TTL", "24h")
SEARCH_DEEP_REWRITE_FUSION = env_choice("SEARCH_DEEP_REWRITE_FUSION", "max", ["max", "rrf"])
# how much the LLM's queries count against the question itself (1: alike). At 1 a broad query ("Melanie")
# floods the top with its own best candidates: on bench/retrieval.py with the stub's mechanical rewrite,
# recall@10 0.669 → 0.441 (max) and 0.356 (rrf); at 0.5 (max) 0.658 (bench/README.md#deep-search-with-an-llm)
SEARCH_DEEP_REWRITE_WEIGHT = env_float("SEARCH_DEEP_REWRITE_WEIGHT", 0.5, minimum=0, maximum=1)
# a search's usage write that lost a race (deadlock, serialization) or found no free connection is tried
# this many times in all, waiting the delay doubled at each try (jittered); then its signals are counted
# as dropped and logged (docs/concurrency.md)
USAGE_WRITE_ATTEMPTS = env_int("USAGE_WRITE_ATTEMPTS", 5, minimum=1, maximum=20)
USAGE_WRITE_RETRY_DELAY = env_float("USAGE_WRITE_RETRY_DELAY", 0.1, minimum=0, maximum=10)

# --- Confidence lifecycle (docs/confidence.md) --------------------------------------------------
# memory_context never injects a memory or summary less trusted than this, whatever min_confidence asks
CONFIDENCE_MIN_FOR_INJECTION = env_float("CONFIDENCE_MIN_FOR_INJECTION", 0.5, minimum=0, maximum=1)
# the daily rollup archives (reason low_confidence) an active memory below this; 0 turns pruning off
CONFIDENCE_PRUNE_THRESHOLD = env_float("CONFIDENCE_PRUNE_THRESHOLD", 0.3, minimum=0, maximum=1)
# ... once it has had this many signals: with the default weights (≈ 0.23–0.32 a signal) 8 signals weigh
# about as much as a memory's prior (2 pseudo-counts), so the evidence, not the initial guess, condemns it
CONFIDENCE_PRUNE_MIN_SIGNALS = env_int("CONFIDENCE_PRUNE_MIN_SIGNALS", 8, minimum=1)
# ... and never while it had a positive signal (feedback, outcome, use, kept code) within this many days
CONFIDENCE_PRUNE_RECENT_DAYS = env_int("CONFIDENCE_PRUNE_RECENT_DAYS", 30, minimum=0)
# a memory whose every code anchor's file was deleted this many days ago is archived (code_deleted) by a
# daily task (docs/code-memory.md#staleness): time to restore the file or move the lesson
CODE_DELETED_GRACE_DAYS = env_int("CODE_DELETED_GRACE_DAYS", 14, minimum=0)
# time decay (docs/confidence.md#time-decay): after this many days without a signal, each further day
# keeps this share of a memory's evidence (memories.confidence.bayes.DECAY_PER_SILENT_DAY explains
# 0.984: ≈ -0.05 in the first month of a typical memory, toward its prior, never past it); 1 turns decay
# off. The grace is at least the 30 days signal events stay in the log: decay shrinks the rolled-up
# evidence, so a silent memory's must be all rolled up by the time it starts
CONFIDENCE_DECAY_GRACE_DAYS = env_int("CONFIDENCE_DECAY_GRACE_DAYS", 30, minimum=30)
CONFIDENCE_DECAY_PER_DAY = env_float("CONFIDENCE_DECAY_PER_DAY", 0.984, minimum=0.5, maximum=1)

# --- SessionStart context (docs/session-context.md; memory_context and the Claude Code plugin) ---
HOOK_SESSION_START_SUMMARIES_ENABLED = env_bool("HOOK_SESSION_START_SUMMARIES_ENABLED", True)
# seconds a web process reuses a project's order of session-start memories, re-reading only those it chose
# and those written since (docs/session-context.md#reuse); 0 orders them all at every session start
CONTEXT_RANKING_REUSE_SECONDS = env_int("CONTEXT_RANKING_REUSE_SECONDS", 60, minimum=0)
HOOK_SESSION_START_SUMMARIES_MAX = env_int("HOOK_SESSION_START_SUMMARIES_MAX", 10, minimum=1, maximum=50)
HOOK_SESSION_START_SUMMARIES_TOKEN_BUDGET = env_int(
    "HOOK_SESSION_START_SUMMARIES_TOKEN_BUDGET", 2000, minimum=200, maximum=20000
)
HOOK_SESSION_START_SUMMARIES_MIN_CONFIDENCE = env_float(
    "HOOK_SESSION_START_SUMMARIES_MIN_CONFIDENCE", 0.7, minimum=0, maximum=1
)
HOOK_SESSION_START_SUMMARIES_PRIORITIZE = env_choice(
    "HOOK_SESSION_START_SUMMARIES_PRIORITIZE", "relevance", ["relevance", "recency", "activation"]
)

# --- Distillation ----------------------------------------------------------------------------
SESSION_TRACE_MAX_BYTES = env_int("SESSION_TRACE_MAX_BYTES", 512 * 1024, minimum=1024)
# a session handed in while it goes on (session_submit partial: a hook after each turn) is distilled once
# no submission has come for this long (docs/claude-code.md#capture); the work sweep checks every minute
SESSION_IDLE_SECONDS = env_int("SESSION_IDLE_SECONDS", 600, minimum=0)

# --- Export / import (docs/export-import.md, memories/transfer/export_format.py) ----------------------------
# the largest text POST /api/v1/import takes (UTF-8 bytes); larger files go through manage.py import_memories
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 1024 * 1024, minimum=1024, maximum=256 * 1024 * 1024)

# --- The write gate (memories/core/gate.py) --------------------------------------------------------
# content shorter than this (secrets removed) carries no reusable lesson: refused on every write path
WRITE_GATE_MIN_CONTENT_CHARS = env_int("WRITE_GATE_MIN_CONTENT_CHARS", 20, minimum=0, maximum=2000)
