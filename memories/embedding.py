"""Embedding: the vectors memories and summaries are found by, and the text each is embedded from.

A leaf (it imports no service): every path that embeds — record, update and re-embed, distillation,
import, consolidation's new memories, summaries, a search's query — calls these, so they all use the
configured embedder the same way and fail with the same ``embedding_failed`` error.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasoningbank.ai.embedders import EmbeddingError, embedder_from_settings
from reasoningbank.errors import ServiceError
from reasoningbank.tracing import span


def embed_texts(texts: list[str]) -> tuple[list[list[float]], str]:
    """One vector per text from the configured embedder, and the embedder's name (stored beside each
    vector: ``manage.py reembed_memories`` finds the ones another model made)."""
    try:  # building the embedder can fail too (a local model's weights missing): the same clear error
        embedder = embedder_from_settings()
        with span("embedding.embed", embedder=embedder.name, texts=len(texts), characters=sum(map(len, texts))):
            return embedder.embed(texts), embedder.name
    except EmbeddingError as exc:
        raise ServiceError(f"embedding failed: {exc}", code="embedding_failed") from exc


def query_embed(text: str) -> list[float]:
    """A search query's vector (the configured embedder; a local model serves repeats from its cache)."""
    (vector,), _ = embed_texts([text])
    return vector


def memory_embedding_text(title: str, description: str, content: str) -> str:
    """The text a memory is embedded from."""
    return f"{title}\n{description}\n{content}"


def summary_embedding_text(summary: str, key_facts: Sequence[str]) -> str:
    """The text a consolidated summary is embedded from."""
    return "\n".join([summary, *key_facts])
