"""Embedders: the offline hashing embedder's properties, and the OpenAI embedder
driven through the real ``openai`` SDK against respx-mocked HTTP (no network)."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import respx

from reasoningbank.ai.embedders import (
    OPENAI_BATCH_SIZE,
    EmbeddingError,
    HashingEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    _build_embedder,
)
from tests.respx_httpx2 import serve_httpx2_from


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(1536)


def similarity(embedder: HashingEmbedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return cosine(va, vb)


# --------------------------------------------------------------------------- hashing


def test_hashing_vectors_have_the_configured_dimensions() -> None:
    for dimensions in (8, 384, 1536):
        [vector] = HashingEmbedder(dimensions).embed(["wrap errors with context"])
        assert len(vector) == dimensions


def test_hashing_returns_one_vector_per_text_in_order(hashing: HashingEmbedder) -> None:
    texts = ["retry with backoff", "use a connection pool", "retry with backoff"]
    vectors = hashing.embed(texts)
    assert len(vectors) == 3
    assert vectors[0] == vectors[2]
    assert vectors[0] != vectors[1]
    assert hashing.embed([]) == []


def test_hashing_vectors_are_unit_length(hashing: HashingEmbedder) -> None:
    for vector in hashing.embed(["a", "Go error wrapping pattern", "x " * 500, "naïve café ünïcode 東京"]):
        assert norm(vector) == pytest.approx(1.0)


def test_hashing_is_deterministic_across_instances(hashing: HashingEmbedder) -> None:
    text = "Always wrap errors with context using fmt.Errorf"
    assert hashing.embed([text]) == HashingEmbedder(1536).embed([text])


def test_hashing_output_is_pinned_so_stored_vectors_stay_comparable() -> None:
    # blake2b, not the per-process-salted hash(): this exact output must not
    # change between processes or releases, or every stored vector goes stale.
    # A deliberate algorithm change must come with a new name ("hashing-v2").
    [vector] = HashingEmbedder(1536).embed(["Retry with backoff"])
    nonzero = {slot: round(value, 4) for slot, value in enumerate(vector) if value}
    assert HashingEmbedder.name == "hashing-v1"
    assert nonzero == {
        36: -0.2182, 94: -0.2182, 148: 0.2182, 155: 0.2182, 166: 0.2182, 168: -0.2182,
        231: 0.2182, 304: 0.2182, 389: -0.2182, 428: -0.2182, 474: -0.2182, 486: -0.2182,
        492: -0.2182, 783: -0.2182, 796: -0.2182, 903: -0.2182, 911: -0.2182, 1013: -0.2182,
        1255: -0.2182, 1332: -0.2182, 1467: 0.2182,
    }  # fmt: skip


def test_empty_or_wordless_text_gives_the_zero_vector(hashing: HashingEmbedder) -> None:
    for text in ("", "   ", "!!! --- ???"):
        [vector] = hashing.embed([text])
        assert vector == [0.0] * 1536


def test_identical_texts_have_similarity_one(hashing: HashingEmbedder) -> None:
    text = "Use context.WithTimeout to bound every outbound HTTP call"
    assert similarity(hashing, text, text) == pytest.approx(1.0)


def test_case_and_punctuation_do_not_change_the_vector(hashing: HashingEmbedder) -> None:
    assert similarity(hashing, "Retry, with BACKOFF!", "retry with backoff") == pytest.approx(1.0)


def test_changing_one_word_of_twelve_keeps_similarity_high(hashing: HashingEmbedder) -> None:
    original = "Always wrap errors with context before returning them to the calling service"
    changed = "Always wrap errors with context before passing them to the calling service"
    assert len(original.split()) == 12
    assert similarity(hashing, original, changed) > 0.8


def test_unrelated_topics_have_low_similarity(hashing: HashingEmbedder) -> None:
    pairs = [
        (
            "Use context.WithTimeout to bound every outbound HTTP call in Go services",
            "Bake sourdough bread hot with plenty of steam for a crisp crust",
        ),
        (
            "Retry transient database deadlocks with exponential backoff and jitter",
            "The football team won the championship after a dramatic penalty shootout",
        ),
        (
            "Run database migrations before deploying the new release",
            "Paint the living room walls a warm shade of yellow",
        ),
    ]
    for a, b in pairs:
        assert similarity(hashing, a, b) < 0.3, (a, b)


def test_related_text_ranks_above_unrelated_text(hashing: HashingEmbedder) -> None:
    query = "how to handle timeouts in HTTP calls"
    related = "Use context.WithTimeout to bound every outbound HTTP call"
    unrelated = "Paint the living room walls a warm shade of yellow"
    assert similarity(hashing, query, related) > similarity(hashing, query, unrelated)


def test_word_variants_share_character_trigrams(hashing: HashingEmbedder) -> None:
    assert similarity(hashing, "timeouts", "timeout") > similarity(hashing, "timeouts", "backoff")


def test_non_positive_dimensions_are_rejected() -> None:
    with pytest.raises(EmbeddingError, match="EMBEDDING_DIMENSIONS"):
        HashingEmbedder(0)


# --------------------------------------------------------------------------- openai


@pytest.fixture
def openai_api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        yield router


def embeddings_reply(vectors: list[list[float]], order: list[int] | None = None) -> httpx.Response:
    order = order if order is not None else list(range(len(vectors)))
    return httpx.Response(
        200,
        json={
            "object": "list",
            "model": "text-embedding-3-small",
            "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in order],
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        },
    )


def test_openai_request_carries_model_input_dimensions_and_key(openai_api: respx.MockRouter) -> None:
    route = openai_api.post("/embeddings").mock(return_value=embeddings_reply([[1.0, 0.0, 0.0]]))
    embedder = OpenAIEmbedder("text-embedding-3-small", 3, api_key="sk-test", base_url=None)

    assert embedder.embed(["wrap errors"]) == [[1.0, 0.0, 0.0]]

    request = route.calls.last.request
    assert json.loads(request.content) == {
        "model": "text-embedding-3-small",
        "input": ["wrap errors"],
        "dimensions": 3,
        "encoding_format": "float",
    }
    assert request.headers["authorization"] == "Bearer sk-test"
    assert embedder.name == "openai:text-embedding-3-small"


def test_openai_vectors_come_back_in_input_order_whatever_the_response_order(
    openai_api: respx.MockRouter,
) -> None:
    vectors = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    openai_api.post("/embeddings").mock(return_value=embeddings_reply(vectors, order=[2, 0, 1]))
    embedder = OpenAIEmbedder("text-embedding-3-small", 2, api_key="sk-test", base_url=None)

    assert embedder.embed(["a", "b", "c"]) == vectors


def test_openai_vectors_are_normalised_when_the_server_does_not(openai_api: respx.MockRouter) -> None:
    openai_api.post("/embeddings").mock(return_value=embeddings_reply([[3.0, 4.0]]))
    embedder = OpenAIEmbedder("nomic-embed-text", 2, api_key="sk-test", base_url=None)

    [vector] = embedder.embed(["x"])
    assert vector == pytest.approx([0.6, 0.8])


def test_openai_vector_of_the_wrong_length_is_an_error_naming_the_setting(
    openai_api: respx.MockRouter,
) -> None:
    openai_api.post("/embeddings").mock(return_value=embeddings_reply([[0.1] * 1536]))
    embedder = OpenAIEmbedder("text-embedding-3-small", 384, api_key="sk-test", base_url=None)

    with pytest.raises(EmbeddingError, match="EMBEDDING_DIMENSIONS must match"):
        embedder.embed(["x"])


def test_openai_server_error_becomes_an_embedding_error(openai_api: respx.MockRouter) -> None:
    route = openai_api.post("/embeddings").respond(500, json={"error": {"message": "boom"}})
    embedder = OpenAIEmbedder("text-embedding-3-small", 3, api_key="sk-test", base_url=None, max_retries=0)

    with pytest.raises(EmbeddingError, match="openai:text-embedding-3-small"):
        embedder.embed(["x"])
    assert route.call_count == 1


def test_openai_inputs_are_sent_in_batches_of_256(openai_api: respx.MockRouter) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        inputs = json.loads(request.content)["input"]
        return embeddings_reply([[1.0, float(len(inputs))] for _ in inputs])

    route = openai_api.post("/embeddings").mock(side_effect=answer)
    embedder = OpenAIEmbedder("text-embedding-3-small", 2, api_key="sk-test", base_url=None)

    vectors = embedder.embed([f"text {i}" for i in range(300)])

    sizes = [len(json.loads(call.request.content)["input"]) for call in route.calls]
    assert sizes == [OPENAI_BATCH_SIZE, 300 - OPENAI_BATCH_SIZE]
    assert len(vectors) == 300


def test_empty_texts_get_zero_vectors_without_being_sent(openai_api: respx.MockRouter) -> None:
    route = openai_api.post("/embeddings").mock(return_value=embeddings_reply([[0.0, 1.0]]))
    embedder = OpenAIEmbedder("text-embedding-3-small", 2, api_key="sk-test", base_url=None)

    assert embedder.embed(["", "real text", "  "]) == [[0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert json.loads(route.calls.last.request.content)["input"] == ["real text"]
    assert embedder.embed([""]) == [[0.0, 0.0]]
    assert route.call_count == 1


def test_openai_compatible_local_server_needs_no_key_and_can_omit_dimensions() -> None:
    with respx.mock(base_url="http://localhost:11434/v1") as router, serve_httpx2_from(router):
        route = router.post("/embeddings").mock(return_value=embeddings_reply([[0.0, 1.0]]))
        embedder = OpenAIEmbedder(
            "nomic-embed-text", 2, api_key=None, base_url="http://localhost:11434/v1", send_dimensions=False
        )

        assert embedder.embed(["x"]) == [[0.0, 1.0]]

    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "nomic-embed-text"
    assert "dimensions" not in body


def test_hosted_openai_without_a_key_is_a_clear_configuration_error() -> None:
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small", 1536, api_key=None, base_url=None)


# ------------------------------------------------------------ sentence-transformers, factory


def test_missing_sentence_transformers_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail even where the extra is installed.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbeddingError, match=r"pip install 'reasoningbank\[sentence-transformers\]'"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2", 384)


def test_unknown_embedder_kind_names_the_allowed_values() -> None:
    with pytest.raises(EmbeddingError, match="hashing, openai, sentence-transformers"):
        _build_embedder("word2vec", 1536, None, None, None, True)


def test_the_same_configuration_reuses_one_embedder() -> None:
    first = _build_embedder("hashing", 64, None, None, None, True)
    assert _build_embedder("hashing", 64, None, None, None, True) is first
    assert _build_embedder("hashing", 32, None, None, None, True) is not first


# --------------------------------------------------------------------------- the configured embedder


def test_threads_asking_at_once_for_an_embedder_not_yet_built_build_it_once(
    monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Any
) -> None:
    from reasoningbank.ai import embedders

    built: list[object] = []

    class SlowToBuild:
        def __init__(self, **options: Any) -> None:
            time.sleep(0.2)  # long enough for every thread to arrive while the first one builds
            built.append(self)

    monkeypatch.setattr(embedders, "MiniLMEmbedder", SlowToBuild)
    settings.EMBEDDER, settings.EMBEDDING_CACHE_DIR = "minilm-onnx", str(tmp_path)  # a key no test built
    embedders._build_embedder.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(lambda _: embedders.embedder_from_settings(), range(8)))
    finally:
        embedders._build_embedder.cache_clear()

    assert len(built) == 1 and all(embedder is built[0] for embedder in got)
