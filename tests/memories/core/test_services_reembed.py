"""memories_reembed (the reembed_memories command): vectors from the configured embedder."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.core.management import call_command
from django.utils import timezone

from memories.core.services import memories_reembed, memory_record
from memories.embedding import memory_embedding_text
from memories.models import Memory
from reasoningbank.ai.embedders import embedder_from_settings

GOOD = {
    "title": "Wrap errors with context",
    "description": "When a service call fails deep in a handler",
    "content": "Use fmt.Errorf with %w so callers can unwrap and log the chain.",
    "outcome": "success",
}


def test_memories_embedded_by_another_model_are_re_embedded_and_marked_changed(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    stale = memory_record(principal=principal, **GOOD)
    current = memory_record(principal=principal, **{**GOOD, "title": "Pin dependency versions"})
    long_ago = timezone.now() - timedelta(days=3)
    Memory.objects.filter(pk=stale.pk).update(embedding=[0.0] * 384, embedding_model="old-model", updated_at=long_ago)
    Memory.objects.filter(pk=current.pk).update(updated_at=long_ago)

    assert memories_reembed() == 1

    embedder = embedder_from_settings()
    stale.refresh_from_db()
    (expected,) = embedder.embed([memory_embedding_text(stale.title, stale.description, stale.content)])
    assert stale.embedding_model == embedder.name
    # stored as float4 by pgvector; another embedder (minilm) batches differently than one text at a time,
    # so the same text is equal to ~1e-8, not bit for bit; another text would differ by far more
    np.testing.assert_allclose(np.asarray(stale.embedding, dtype=np.float64), expected, rtol=0, atol=1e-6)
    assert stale.updated_at > long_ago  # consolidation's neighbour graph will probe it again
    current.refresh_from_db()
    assert current.updated_at == long_ago


def test_the_command_re_embeds_everything_when_asked(cast, make_token, capsys):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory_record(principal=principal, **GOOD)
    call_command("reembed_memories", "--all")
    assert capsys.readouterr().out.strip().splitlines()[-1] == "1"  # the count, on the last line
