"""The product under a quality bench (``retrieval.py``, ``consolidation_quality.py``): settings as with
another embedder, the embedder built or why it cannot be, on-demand consolidation held off while a bank
is recorded, a bench org removed with its memories, and a bank's usage signals undone."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from _dataset import memories_delete


@contextlib.contextmanager
def embedder_settings(kind: str) -> Iterator[None]:
    """Settings as with ``EMBEDDER=<kind>`` (the embedder is read at record and at search time)."""
    from django.conf import settings
    from django.test.utils import override_settings

    overrides: dict[str, Any] = {"EMBEDDER": kind}
    if settings.EMBEDDER != kind and not os.environ.get("EMBEDDING_MODEL"):
        # the default model follows EMBEDDER in reasoningbank/settings/ai.py; computed there for the process's EMBEDDER
        overrides["EMBEDDING_MODEL"] = {
            "openai": "text-embedding-3-small",
            "sentence-transformers": "all-MiniLM-L6-v2",
            "minilm": "all-MiniLM-L6-v2",
            "minilm-onnx": "all-MiniLM-L6-v2",
        }.get(kind, "")
    with override_settings(**overrides):
        yield


def embedder_build(kind: str) -> tuple[Any | None, str]:
    """(the embedder, "") or (None, why it cannot be built here)."""
    from reasoningbank.ai.embedders import embedder_from_settings

    with embedder_settings(kind):
        try:
            embedder = embedder_from_settings()
            embedder.embed(["probe"])
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"
    return embedder, ""


@contextlib.contextmanager
def on_demand_consolidation_off() -> Iterator[None]:
    """On-demand consolidation (every 20 new memories on Teams+ plans) would queue runs that merge
    and archive the bank's memories if a worker ever served this database: not part of recording."""
    from memories.events import memories_added

    try:
        from consolidation import receivers
    except ImportError:  # pragma: no cover
        yield
        return
    memories_added.disconnect(dispatch_uid="consolidation.on_demand")
    try:
        yield
    finally:
        memories_added.connect(receivers.on_memories_added, dispatch_uid="consolidation.on_demand")


def bank_reset(slug: str) -> None:
    from accounts.models import Organization

    org = Organization.objects.filter(slug=slug).first()
    if org is None:
        return
    memories_delete("organization_id = %s", [org.id])
    org.delete()


def usage_reset(org: Any) -> int:
    """Back to the state right after recording: no usage signal, no impression, each memory's prior confidence."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_memorysignal WHERE organization_id = %s", [org.id])
        signals = cursor.rowcount
        cursor.execute("DELETE FROM memories_memorysignalaggregate WHERE organization_id = %s", [org.id])
        cursor.execute(
            "UPDATE memories_memory SET usage_count = 0, last_used_at = NULL, alpha = prior_alpha, "
            "beta = prior_beta, confidence = prior_alpha / (prior_alpha + prior_beta), impression_count = 0, "
            "impressions_unused = 0, last_shown_at = NULL, last_signal_at = NULL "
            "WHERE organization_id = %s AND (usage_count <> 0 OR last_used_at IS NOT NULL "
            "OR alpha <> prior_alpha OR beta <> prior_beta OR impression_count <> 0 OR last_signal_at IS NOT NULL)",
            [org.id],
        )
        return signals
