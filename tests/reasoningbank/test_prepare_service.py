"""``manage.py prepare_service``, run.sh's start-up step (docs/operations.md#what-happens-at-start): each
piece of work only when it is not done yet, in one process."""

from __future__ import annotations

import io
import os
import threading
import time
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from reasoningbank import db_locks
from reasoningbank.db_locks import lock_held
from reasoningbank.management.commands import prepare_service
from reasoningbank.startup import migrations_unapplied, static_files_stale


@pytest.fixture
def commands_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commands prepare_service calls, by name (they still run). The embedded server is not told to
    outlive this process: it is the test run's own."""
    called: list[str] = []

    def recording(name: str, *args: Any, **kwargs: Any) -> Any:
        called.append(name)
        return call_command(name, *args, **kwargs)

    monkeypatch.setattr(prepare_service, "call_command", recording)
    monkeypatch.setattr(prepare_service, "server_keep_running", lambda: called.append("keep-running"))
    return called


@pytest.fixture
def static_root(settings: Any, tmp_path: Any) -> Any:
    settings.STATIC_ROOT = tmp_path / "static"
    return settings.STATIC_ROOT


@pytest.mark.django_db
def test_a_migrated_database_is_not_migrated_again(commands_run, static_root):
    out = io.StringIO()
    call_command("prepare_service", stdout=out)

    assert migrations_unapplied() == []
    assert "migrate" not in commands_run
    assert "migrations   none to apply" in out.getvalue()
    assert commands_run[-1] == "keep-running"  # web and worker attach next


@pytest.mark.django_db
@pytest.mark.parametrize("embedder", ["minilm-onnx", "hashing"])
def test_the_default_embedder_is_built_before_web_takes_a_request(
    commands_run, static_root, settings, monkeypatch, embedder
):
    built: list[str] = []
    monkeypatch.setattr(prepare_service, "embedder_from_settings", lambda: built.append(settings.EMBEDDER))
    settings.EMBEDDER = embedder
    out = io.StringIO()

    call_command("prepare_service", stdout=out)

    if embedder == "minilm-onnx":  # its graph is built once into the cache every web worker then loads
        assert built == ["minilm-onnx"] and "embedder     minilm-onnx ready" in out.getvalue()
    else:  # nothing to build ahead
        assert built == [] and "embedder" not in out.getvalue().replace("re-embedded", "")


@pytest.mark.django_db
def test_static_files_are_collected_once_and_then_left_alone(commands_run, static_root):
    call_command("prepare_service", stdout=io.StringIO())
    assert commands_run.count("collectstatic") == 1
    assert static_files_stale() == []

    out = io.StringIO()
    call_command("prepare_service", stdout=out)
    assert commands_run.count("collectstatic") == 1
    assert "static files up to date" in out.getvalue()


def test_a_missing_or_older_copy_of_a_static_file_is_stale(static_root):
    call_command("collectstatic", interactive=False, verbosity=0)
    collected = sorted(p for p in static_root.rglob("*.css") if p.is_file())
    missing, older = collected[0], collected[1]
    missing.unlink()
    os.utime(older, (0, 0))

    stale = static_files_stale()

    assert sorted(stale) == sorted(str(p.relative_to(static_root)) for p in (missing, older))


@pytest.mark.django_db
def test_memories_embedded_by_another_model_are_re_embedded(commands_run, static_root, agent):
    from memories.models import Memory
    from tests.factories import MemoryFactory

    memory = MemoryFactory(principal=agent)
    Memory.objects.filter(pk=memory.pk).update(embedding_model="an-older-model")
    out = io.StringIO()

    call_command("prepare_service", stdout=out)

    assert "1 memories and 0 summaries re-embedded" in out.getvalue()
    memory.refresh_from_db()
    assert memory.embedding_model != "an-older-model"


@pytest.mark.django_db
def test_a_bank_embedded_by_minilm_is_re_embedded_for_the_default_minilm_onnx_with_progress(
    commands_run, static_root, agent, settings, tmp_path
):
    """An install upgraded to the new default: its memories carry numpy ``minilm`` vectors, and the start
    re-embeds them with ONNX Runtime, printing its progress; the vectors stay the same model's."""
    import numpy as np

    from memories.core.services import memory_record
    from memories.models import Memory

    settings.EMBEDDER, settings.EMBEDDING_MODEL, settings.EMBEDDING_MODEL_DIR = "minilm", "all-MiniLM-L6-v2", None
    settings.EMBEDDING_CACHE_DIR = str(tmp_path / "cache")
    memory = memory_record(
        principal=agent,
        title="Retry flaky network calls",
        description="HTTP calls to a partner API time out",
        content="Use jittered exponential backoff, at most five attempts.",
        outcome="success",
    )
    before = Memory.objects.get(pk=memory.pk)
    assert before.embedding_model == "minilm:all-MiniLM-L6-v2"
    settings.EMBEDDER = "minilm-onnx"
    out = io.StringIO()

    call_command("prepare_service", stdout=out)

    assert "embeddings   1/1 re-embedded" in out.getvalue()
    assert "1 memories and 0 summaries re-embedded" in out.getvalue()
    after = Memory.objects.get(pk=memory.pk)
    assert after.embedding_model == "minilm-onnx-int8:all-MiniLM-L6-v2"
    # int8 weights move the vector a little (cosine 0.92-0.98 on single texts), never to another meaning
    assert 0.9 < float(np.dot(before.embedding, after.embedding)) < 0.9999


@pytest.mark.django_db(transaction=True)
def test_a_second_machine_starting_at_once_waits_for_the_first_to_finish_preparing(
    commands_run, static_root, monkeypatch
):
    """Two run.sh on two machines against one database: the second must not apply the migrations the first
    is applying (a duplicate table, a failed start); it waits, then finds nothing left to do."""
    looked: list[str] = []
    monkeypatch.setattr(prepare_service, "migrations_unapplied", lambda: looked.append("looked") or [])
    errors: list[BaseException] = []
    refused: list[str] = []  # the second machine's attempts at the lock while the first holds it
    take = db_locks.lock_try_in_transaction
    monkeypatch.setattr(db_locks, "lock_try_in_transaction", lambda name: take(name) or refused.append(name) or False)
    monkeypatch.setattr(db_locks, "LOCK_POLL_SECONDS", 0.05)

    def second_machine() -> None:
        try:
            call_command("prepare_service", stdout=io.StringIO())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    with lock_held(prepare_service.PREPARE_LOCK):  # the first machine, preparing
        machine = threading.Thread(target=second_machine)
        machine.start()
        deadline = time.monotonic() + 30
        while len(refused) < 2 and machine.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(refused) >= 2, "the second machine did not wait for the first"
        assert looked == []
    machine.join(120)

    assert errors == []
    assert looked == ["looked"]


@pytest.mark.django_db
def test_behind_a_transaction_pooler_search_s_settings_are_stored_as_the_role_s_defaults(
    commands_run, static_root, settings, monkeypatch
):
    stored: list[str] = []
    monkeypatch.setattr(prepare_service, "session_defaults_store", lambda: stored.append("stored") or {"a.b": "1"})
    call_command("prepare_service", stdout=io.StringIO())
    assert stored == []  # no pooler: each connection asks for them at its start

    settings.DATABASE_POOLER = "transaction"
    out = io.StringIO()
    call_command("prepare_service", stdout=out)
    assert stored == ["stored"]
    assert "pooler       a.b stored as the role's defaults" in out.getvalue()
