"""Recording an identical memory (docs/memory-model.md#how-a-memory-enters-the-bank): where an active
memory of the same place already has the same text (case and whitespace ignored), outcome and kind,
nothing is written and that memory comes back as the duplicate. Anything else is recorded by the
fingerprint (near copies are the write gate's: tests/memories/core/test_gate_records.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction

from accounts.models import AuditEvent
from memories.core import services
from memories.core.fingerprint import memory_content_hash
from memories.core.services import memory_record, memory_record_or_duplicate, memory_update
from memories.models import Memory
from memories.moderation.services import memory_archive
from tests.factories import ProjectFactory, TeamFactory

GOOD = {
    "title": "Wrap errors with context",
    "description": "When a service call fails deep in a handler",
    "content": "Use fmt.Errorf with %w so callers can unwrap and log the chain.",
    "outcome": "success",
}


def record(principal: Any, **overrides: Any) -> services.RecordResult:
    return memory_record_or_duplicate(principal=principal, **{**GOOD, **overrides})


def counts() -> tuple[int, int]:
    return Memory.objects.count(), AuditEvent.objects.count()


@pytest.fixture
def writer(cast, make_token):
    return make_token(cast.org_a, projects=[cast.project_a])[1]


def test_recording_an_identical_memory_returns_the_existing_one_and_writes_nothing(writer, monkeypatch):
    first = record(writer)
    before = counts()
    monkeypatch.setattr(services, "embed_texts", lambda texts: pytest.fail("a duplicate needs no embedding"))

    again = record(writer)

    assert again.duplicate is True and first.duplicate is False
    assert again.memory.pk == first.memory.pk
    assert "identical memory already exists" in again.message and first.memory.pk in again.message
    assert counts() == before  # no memory, no audit event


def test_memory_record_returns_the_existing_memory_for_an_identical_record(writer):
    assert memory_record(principal=writer, **GOOD).pk == memory_record(principal=writer, **GOOD).pk


def test_case_and_whitespace_do_not_make_a_record_different(writer):
    first = record(writer)
    again = record(
        writer,
        title="  WRAP errors   with Context ",
        description="When a service call\nfails deep in a handler",
        content="use fmt.Errorf with %w so callers can unwrap and log the chain.\n",
    )
    assert again.duplicate and again.memory.pk == first.memory.pk


def test_the_existing_memorys_tags_are_kept(writer):
    first = record(writer, tags=["go"])
    again = record(writer, tags=["errors"])
    assert again.duplicate and again.memory.pk == first.memory.pk
    assert Memory.objects.get(pk=first.memory.pk).tags == ["go"]


@pytest.mark.parametrize(
    "change",
    [
        {"content": "Use fmt.Errorf with %w so callers can unwrap and log the whole chain."},  # near-identical
        {"title": "Wrap errors with context in Go"},
        {"outcome": "failure"},  # the same words as a pitfall are a different memory
        {"kind": "semantic"},
    ],
)
def test_a_record_that_differs_in_text_outcome_or_kind_is_a_new_memory(writer, change, settings):
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0  # the fingerprint alone
    first = record(writer)
    other = record(writer, **change)
    assert not other.duplicate and other.memory.pk != first.memory.pk
    assert Memory.objects.count() == 2


def test_moving_words_between_fields_is_not_the_same_text(writer, settings):
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0  # the fingerprint alone (the embedding is the same)
    first = record(writer, title="Wrap errors", description="with context. When a service call fails")
    other = record(writer, title="Wrap errors with context.", description="When a service call fails")
    assert not other.duplicate and other.memory.pk != first.memory.pk


def test_the_same_text_in_another_project_is_a_new_memory(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a)
    in_web = record(principal, project="web-app")
    in_mobile = record(principal, project="mobile")
    assert not in_mobile.duplicate and in_mobile.memory.pk != in_web.memory.pk
    assert record(principal, project="mobile").memory.pk == in_mobile.memory.pk


def test_the_same_text_at_team_or_org_scope_is_a_new_memory_per_place(cast, make_token):
    cast.org_a.plan = "teams"
    cast.org_a.save()
    cast.project_a.team = TeamFactory(organization=cast.org_a, slug="platform")
    cast.project_a.save()
    _, admin = make_token(cast.org_a)
    places = [record(admin, project="web-app", scope=scope) for scope in ("project", "team", "org")]
    assert len({result.memory.pk for result in places}) == 3 and not any(r.duplicate for r in places)
    again = [record(admin, project="web-app", scope=scope) for scope in ("project", "team", "org")]
    assert [r.memory.pk for r in again] == [r.memory.pk for r in places] and all(r.duplicate for r in again)


def test_an_archived_original_does_not_count_a_new_record_is_made(writer):
    first = record(writer).memory
    memory_archive(principal=writer, memory=first)
    again = record(writer)
    assert not again.duplicate and again.memory.pk != first.pk
    assert again.memory.state == Memory.STATE_ACTIVE


def test_an_identical_memory_of_another_org_never_matches(cast, make_token):
    _, in_a = make_token(cast.org_a, projects=[cast.project_a])
    _, in_b = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(in_a).memory
    ours = record(in_b)
    assert not ours.duplicate and ours.memory.pk != theirs.pk
    assert ours.memory.organization == cast.org_b
    assert record(in_b).memory.pk == ours.memory.pk  # and B's own copy is found for B


def test_an_edited_memory_is_matched_by_its_new_text_only(writer):
    memory = record(writer).memory
    memory_update(principal=writer, memory=memory, changes={"content": "Wrap with %w; log the chain once."})
    assert record(writer, content="Wrap with %w; log the chain once.").memory.pk == memory.pk
    assert not record(writer).duplicate  # the old text is no longer there


def test_every_created_memory_carries_the_fingerprint_of_its_text(writer):
    memory = record(writer).memory
    memory.refresh_from_db()
    assert memory.content_hash == memory_content_hash(GOOD["title"], GOOD["description"], GOOD["content"])


@pytest.mark.django_db(transaction=True)  # two connections: each record commits on its own
def test_two_identical_records_at_once_make_one_memory(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    first_inserted, release = threading.Event(), threading.Event()
    results: dict[str, services.RecordResult] = {}
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # holds its transaction open until the second record is waiting
                results["first"] = record(principal)
                first_inserted.set()
                release.wait(timeout=10)
        except BaseException as exc:  # the test reports whatever the thread hit
            errors.append(exc)
            first_inserted.set()
        finally:
            connection.close()

    def second() -> None:
        try:
            results["second"] = record(principal)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert first_inserted.wait(timeout=10)
    two = threading.Thread(target=second)
    two.start()
    two.join(timeout=0.5)
    assert two.is_alive(), "the second identical record must wait for the first to commit"
    release.set()
    one.join(timeout=10)
    two.join(timeout=10)

    assert errors == []
    assert results["second"].duplicate and results["second"].memory.pk == results["first"].memory.pk
    assert Memory.objects.count() == 1
