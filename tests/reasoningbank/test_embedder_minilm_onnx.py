"""EMBEDDER=minilm-onnx: the packaged all-MiniLM-L6-v2 as an ONNX graph, int8 weights, offline.

The fp32 graph is checked against the numpy forward pass (itself pinned to sentence-transformers'
published values in test_embedder_minilm.py) to float rounding: that proves the graph is the model.
The int8 graph is checked against the same reference values within the error quantisation brings
(cosine to the fp32 vector >= 0.9; measured 0.92-0.98), never exact equality.
"""

from __future__ import annotations

import socket
from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from reasoningbank.ai import minilm
from reasoningbank.ai.embedders import EmbeddingError, MiniLMEmbedder, embedder_from_settings
from reasoningbank.ai.minilm_onnx import OnnxMiniLMModel
from tests.reasoningbank.test_embedder_minilm import REFERENCE_PREFIXES, REFERENCE_SENTENCES

TEXTS = [
    "Caroline\n-\nI went to a LGBTQ support group yesterday and it was so powerful.",
    "When did Melanie paint a sunrise?",
    "retry the request with exponential backoff and jitter",
    "x",
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx")


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


def test_embedder_minilm_onnx_in_settings_builds_it_with_its_own_name() -> None:
    with override_settings(EMBEDDER="minilm-onnx", EMBEDDING_MODEL="all-MiniLM-L6-v2", EMBEDDING_DIMENSIONS=384):
        embedder = embedder_from_settings()
        assert embedder is embedder_from_settings()
    assert embedder.name == "minilm-onnx-int8:all-MiniLM-L6-v2"


def test_without_onnx_runtime_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingError, match="onnx and onnxruntime"):
        MiniLMEmbedder("all-MiniLM-L6-v2", 384, runtime="onnx")
