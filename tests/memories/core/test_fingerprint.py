"""The fingerprint of a memory's text (memories/core/fingerprint.py) and the migration that gives existing
memories theirs."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from memories.core.fingerprint import memory_content_hash, text_normalise
from memories.models import Memory

MIGRATION = importlib.import_module("memories.migrations.0006_memory_content_hash")
LOCKFILES = "Commit the lockfiles."


def test_normalising_folds_case_and_collapses_whitespace():
    assert text_normalise("  Use\tfmt.Errorf\n\nWITH  %w ") == "use fmt.errorf with %w"
    assert text_normalise("Straße") == text_normalise("STRASSE")


def test_the_fingerprint_ignores_case_and_whitespace_but_not_words():
    base = memory_content_hash("Wrap errors", "When it fails", "Use %w.")
    assert memory_content_hash(" WRAP  errors", "when it\nfails", "use %w. ") == base
    assert memory_content_hash("Wrap errors", "When it fails", "Use %v.") != base
    assert len(base) == 64


def test_the_fingerprint_keeps_the_fields_apart():
    assert memory_content_hash("a b", "c", "d") != memory_content_hash("a", "b c", "d")


@pytest.mark.parametrize(
    "fields",
    [("Wrap errors", "When it fails", "Use %w."), ("  Ünïcode\tTITLE ", "ß", ""), ("a", "b\u00a0c", "d\r\ne")],
)
def test_the_migrations_frozen_copy_computes_the_same_fingerprint(fields):
    assert MIGRATION._content_hash(*fields) == memory_content_hash(*fields)


def test_the_migration_fills_the_fingerprint_of_existing_memories(cast, make_token):
    from memories.core.services import memory_record

    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = memory_record(
        principal=principal, title="Pin versions", description="In CI", content=LOCKFILES, outcome="success"
    )
    Memory.objects.filter(pk=memory.pk).update(content_hash="")  # as before the migration

    MIGRATION.fill_content_hashes(apps, None)

    assert Memory.objects.get(pk=memory.pk).content_hash == memory_content_hash("Pin versions", "In CI", LOCKFILES)
