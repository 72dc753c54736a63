"""EMBEDDER=minilm-onnx: the packaged all-MiniLM-L6-v2 as an ONNX graph, int8 weights, offline.

The fp32 graph is checked against the numpy forward pass (itself pinned to sentence-transformers'
published values in test_embedder_minilm.py) to float rounding: that proves the graph is the model.
The int8 graph is checked against the same reference values within the error quantisation brings
(cosine to the fp32 vector >= 0.9; measured 0.92-0.98), never exact equality.

The graph cache (built once, loaded by later processes) is tested on a tiny BERT with random weights
and the real tokenizer, so building it takes milliseconds: loaded from the cache on the second load,
rebuilt when the cache entry is damaged, refused by the runtime, or made from other weights or versions.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import override_settings
from safetensors.numpy import save_file

from reasoningbank.ai import minilm, minilm_onnx
from reasoningbank.ai.embedders import EmbeddingError, MiniLMEmbedder, embedder_from_settings
from reasoningbank.ai.minilm_onnx import OnnxMiniLMModel
from tests.reasoningbank.test_embedder_minilm import (
    BASE_DIR,
    REFERENCE_PREFIXES,
    REFERENCE_SENTENCES,
    SETTINGS_PROBE,
)

TEXTS = [
    "Caroline\n-\nI went to a LGBTQ support group yesterday and it was so powerful.",
    "When did Melanie paint a sunrise?",
    "retry the request with exponential backoff and jitter",
    "x",
]


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def embedder(graph_cache: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx", cache_dir=str(graph_cache))


@pytest.fixture(scope="module")
def numpy_vectors() -> np.ndarray:
    return minilm.load_model(None).encode(TEXTS + REFERENCE_SENTENCES)


def test_the_packaged_weights_load_and_embed_with_the_network_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the minilm-onnx embedder tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    embedder = MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx")
    [vector] = embedder.embed(["wrap errors with context"])
    assert embedder.name == "minilm-onnx-int8:all-MiniLM-L6-v2"
    assert len(vector) == 384


def test_the_fp32_graph_computes_the_numpy_models_vectors(numpy_vectors: np.ndarray) -> None:
    graph = OnnxMiniLMModel(minilm.packaged_model_dir(), int8=False)
    vectors = graph.encode(TEXTS + REFERENCE_SENTENCES)
    assert np.abs(vectors - numpy_vectors).max() < 1e-4


def test_int8_vectors_stay_close_to_the_reference_model(embedder: MiniLMEmbedder, numpy_vectors: np.ndarray) -> None:
    vectors = np.asarray(embedder.embed(TEXTS + REFERENCE_SENTENCES[:2] + REFERENCE_SENTENCES[3:]))
    reference = np.concatenate([numpy_vectors[: len(TEXTS) + 2], numpy_vectors[len(TEXTS) + 3 :]])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (np.sum(vectors * reference, axis=1) >= 0.9).all()
    # sentence-transformers' published first six dimensions, within quantisation error
    published = np.asarray(REFERENCE_PREFIXES)[[0, 1, 3]]
    assert np.abs(vectors[len(TEXTS) :, :6] - published).max() < 0.05


def test_the_graph_loaded_from_the_cache_gives_the_reference_models_vectors(
    embedder: MiniLMEmbedder, graph_cache: Path, numpy_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [p.name.startswith("minilm-onnx-int8-") for p in graph_cache.iterdir()] == [True]
    monkeypatch.setattr(minilm_onnx, "graph_bytes", refuse_to_build)
    again = MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx", cache_dir=str(graph_cache))
    vectors = np.asarray(again.embed(TEXTS))
    assert np.abs(vectors - np.asarray(embedder.embed(TEXTS))).max() < 1e-5
    assert (np.sum(vectors * numpy_vectors[: len(TEXTS)], axis=1) >= 0.9).all()


def test_int8_vectors_still_rank_a_paraphrase_above_unrelated_text(embedder: MiniLMEmbedder) -> None:
    query, paraphrase, unrelated = embedder.embed(
        ["how do I retry failed HTTP calls", "retry the request with exponential backoff", "the cat sat on the mat"]
    )
    assert np.dot(query, paraphrase) > np.dot(query, unrelated) + 0.2


def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(embedder: MiniLMEmbedder) -> None:
    # dynamic quantisation scales activations per call: batched together the texts would move each other
    batch = embedder.embed(TEXTS)
    singles = [embedder.embed([t])[0] for t in TEXTS]
    assert np.abs(np.asarray(batch) - np.asarray(singles)).max() < 1e-5


def test_embedder_minilm_onnx_in_settings_builds_it_with_its_own_name_and_caches_its_graph(tmp_path: Path) -> None:
    with override_settings(
        EMBEDDER="minilm-onnx",
        EMBEDDING_MODEL="all-MiniLM-L6-v2",
        EMBEDDING_DIMENSIONS=384,
        EMBEDDING_MODEL_DIR=None,
        EMBEDDING_CACHE_DIR=str(tmp_path),
    ):
        embedder = embedder_from_settings()
        assert embedder is embedder_from_settings()
    assert embedder.name == "minilm-onnx-int8:all-MiniLM-L6-v2"
    assert [p.suffix for p in tmp_path.iterdir()] == [".graph"]


def test_with_no_embedder_in_the_environment_the_product_runs_minilm_onnx(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("EMBEDD", "DEBUG", "DATABASE_URL"))}
    environment.update(DEBUG="1", RB_DATA_DIR=str(tmp_path))
    finished = subprocess.run(
        [sys.executable, "-c", SETTINGS_PROBE],
        cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    seen = json.loads(finished.stdout.strip().splitlines()[-1])
    assert seen == {"kind": "minilm-onnx", "name": "minilm-onnx-int8:all-MiniLM-L6-v2", "length": 384}
    # the process cached its graph in the data directory: the next start loads it
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".graph"]


def test_without_onnx_runtime_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingError, match="onnx and onnxruntime"):
        MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx")


# --------------------------------------------------------------------------- the graph cache


def refuse_to_build(*args: Any, **kwargs: Any) -> bytes:
    raise AssertionError("the graph was built although the cache holds it")


def tiny_bert(directory: Path, seed: int = 1) -> Path:
    """A one-layer BERT of width 8 with random weights and the real tokenizer: a graph built in milliseconds."""
    hidden, inner, positions, vocab = 8, 16, 64, 30522
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "hidden_size": hidden,
        "num_attention_heads": 2,
        "num_hidden_layers": 1,
        "intermediate_size": inner,
        "max_position_embeddings": positions,
        "layer_norm_eps": 1e-12,
        "vocab_size": vocab,
    }
    (directory / "config.json").write_text(json.dumps(config))
    shutil.copy(minilm.packaged_model_dir() / "tokenizer.json", directory / "tokenizer.json")
    shapes = {
        "embeddings.word_embeddings.weight": (vocab, hidden),
        "embeddings.position_embeddings.weight": (positions, hidden),
        "embeddings.token_type_embeddings.weight": (2, hidden),
        "encoder.layer.0.attention.self.query.weight": (hidden, hidden),
        "encoder.layer.0.attention.self.key.weight": (hidden, hidden),
        "encoder.layer.0.attention.self.value.weight": (hidden, hidden),
        "encoder.layer.0.attention.output.dense.weight": (hidden, hidden),
        "encoder.layer.0.intermediate.dense.weight": (inner, hidden),
        "encoder.layer.0.output.dense.weight": (hidden, inner),
    }
    weights = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    for name, shape in list(shapes.items())[3:]:
        weights[name.replace(".weight", ".bias")] = rng.standard_normal(shape[0]).astype(np.float32)
    for norm in ("embeddings.LayerNorm", *(f"encoder.layer.0.{n}.LayerNorm" for n in ("attention.output", "output"))):
        weights[f"{norm}.weight"] = np.ones(hidden, dtype=np.float32)
        weights[f"{norm}.bias"] = np.zeros(hidden, dtype=np.float32)
    save_file(weights, str(directory / "model.safetensors"))
    return directory


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The model directories a graph was built for (the real builder runs)."""
    built: list[Path] = []
    real = minilm_onnx.graph_bytes

    def counting(model_dir: Path, *, int8: bool) -> bytes:
        built.append(model_dir)
        return real(model_dir, int8=int8)

    monkeypatch.setattr(minilm_onnx, "graph_bytes", counting)
    return built


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.graph"))


def test_the_second_load_takes_the_graph_from_the_cache(tmp_path: Path, builds: list[Path]) -> None:
    model_dir, cache = tiny_bert(tmp_path / "model"), tmp_path / "cache"
    first = OnnxMiniLMModel(model_dir, cache_dir=cache)
    second = OnnxMiniLMModel(model_dir, cache_dir=cache)
    assert builds == [model_dir]
    assert len(entries(cache)) == 1
    assert np.abs(first.encode(TEXTS) - second.encode(TEXTS)).max() < 1e-6


def test_without_a_cache_directory_every_load_builds(tmp_path: Path, builds: list[Path]) -> None:
    model_dir = tiny_bert(tmp_path / "model")
    OnnxMiniLMModel(model_dir)
    OnnxMiniLMModel(model_dir)
    assert builds == [model_dir, model_dir]


def test_a_damaged_cache_entry_is_rebuilt_and_replaced(tmp_path: Path, builds: list[Path]) -> None:
    model_dir, cache = tiny_bert(tmp_path / "model"), tmp_path / "cache"
    expected = OnnxMiniLMModel(model_dir, cache_dir=cache).encode(TEXTS)
    [entry] = entries(cache)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte inside the weights: still a parsable graph
    entry.write_bytes(bytes(data))
    rebuilt = OnnxMiniLMModel(model_dir, cache_dir=cache)
    assert len(builds) == 2
    assert np.abs(rebuilt.encode(TEXTS) - expected).max() < 1e-6
    OnnxMiniLMModel(model_dir, cache_dir=cache)  # the replaced entry is sound: no third build
    assert len(builds) == 2


def test_a_truncated_cache_entry_is_rebuilt(tmp_path: Path, builds: list[Path]) -> None:
    model_dir, cache = tiny_bert(tmp_path / "model"), tmp_path / "cache"
    OnnxMiniLMModel(model_dir, cache_dir=cache)
    [entry] = entries(cache)
    entry.write_bytes(entry.read_bytes()[:1000])
    OnnxMiniLMModel(model_dir, cache_dir=cache)
    assert len(builds) == 2


def test_a_cached_graph_the_runtime_refuses_is_rebuilt(tmp_path: Path, builds: list[Path]) -> None:
    model_dir, cache = tiny_bert(tmp_path / "model"), tmp_path / "cache"
    OnnxMiniLMModel(model_dir, cache_dir=cache)
    [entry] = entries(cache)
    minilm_onnx.graph_cache_write(entry, b"not an onnx graph")  # a sound checksum over garbage
    model = OnnxMiniLMModel(model_dir, cache_dir=cache)
    assert len(builds) == 2
    assert model.encode(["retry with backoff"]).shape == (1, 8)
    assert minilm_onnx.graph_cache_read(entry) not in (None, b"not an onnx graph")


def test_other_weights_get_their_own_graph_and_the_stale_entry_is_dropped(tmp_path: Path, builds: list[Path]) -> None:
    cache = tmp_path / "cache"
    model_dir = tiny_bert(tmp_path / "model", seed=1)
    old = OnnxMiniLMModel(model_dir, cache_dir=cache).encode(TEXTS)
    [stale] = entries(cache)
    tiny_bert(model_dir, seed=2)  # the same directory, new weights (an upgraded weights package)
    new = OnnxMiniLMModel(model_dir, cache_dir=cache).encode(TEXTS)
    assert len(builds) == 2
    assert np.abs(new - old).max() > 0.01
    assert entries(cache) != [stale] and len(entries(cache)) == 1


def test_another_onnx_runtime_version_builds_the_graph_again(
    tmp_path: Path, builds: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir, cache = tiny_bert(tmp_path / "model"), tmp_path / "cache"
    OnnxMiniLMModel(model_dir, cache_dir=cache)
    real = minilm_onnx.metadata.version
    monkeypatch.setattr(minilm_onnx.metadata, "version", lambda name: "9.9.9" if name == "onnxruntime" else real(name))
    OnnxMiniLMModel(model_dir, cache_dir=cache)
    assert len(builds) == 2


def test_an_unwritable_cache_directory_costs_only_the_build(
    tmp_path: Path, builds: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    model_dir, not_a_directory = tiny_bert(tmp_path / "model"), tmp_path / "file"
    not_a_directory.write_text("")
    with caplog.at_level(logging.WARNING, logger="reasoningbank.ai.minilm_onnx"):
        model = OnnxMiniLMModel(model_dir, cache_dir=not_a_directory)
    assert model.encode(["retry with backoff"]).shape == (1, 8)
    assert "could not cache the ONNX graph" in caplog.text
    assert not_a_directory.read_text() == ""
