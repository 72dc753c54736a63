"""LLM purposes are a registry the apps fill (reasoningbank/ai/purposes.py), and an LLM call names
what it was made for with a generic reference instead of foreign keys into the apps: the kernel's
``LlmCall`` needs no migration for a new purpose and knows no app."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from reasoningbank.ai.metered import llm_complete
from reasoningbank.ai.purposes import UnknownPurpose, purpose_label, purpose_register, purpose_unregister, purposes
from reasoningbank.models import LlmCall
from tests.factories import AgentSessionFactory, ConsolidationRunFactory
from tests.fakes import ScriptedLLM

BEFORE_SUBJECT = ("reasoningbank", "0004_llm_purposes_registered")


def test_the_apps_register_every_purpose_they_call_an_llm_for_with_its_label():
    assert {(p.name, p.label) for p in purposes()} >= {
        ("distill", "Distill session"),
        ("reason", "Reasoned answer (memory_ask)"),
        ("synthesize", "Synthesize cluster"),
        ("judge", "Contradiction judge"),
        ("supersede", "Supersession check"),
        ("patterns", "Pattern extraction"),
        ("summarize", "Summarize cluster"),
        ("other", "Other"),
    }


def test_a_purpose_no_app_registered_is_refused_before_the_llm_is_called(cast):
    llm = ScriptedLLM(["a reply"])
    with pytest.raises(UnknownPurpose, match="'tarot'"):
        llm_complete(organization=cast.org_a, purpose="tarot", system="s", prompt="p", llm=llm)
    assert llm.calls == [] and not LlmCall.objects.exists()


def test_a_new_purpose_is_one_registration_and_needs_no_migration(cast):
    purpose_register("rerank", "Rerank search hits")
    try:
        llm_complete(organization=cast.org_a, purpose="rerank", system="s", prompt="p", llm=ScriptedLLM(["ok"]))
        call = LlmCall.objects.get()
        assert (call.purpose, call.purpose_label) == ("rerank", "Rerank search hits")
        call_command("makemigrations", "reasoningbank", "--check", "--dry-run", verbosity=0)  # SystemExit if not
    finally:
        purpose_unregister("rerank")
    assert purpose_label("rerank") == "rerank"  # a row of a purpose gone is still shown, by its name


def test_a_call_names_its_subject_and_the_app_finds_its_calls_by_it(cast):
    session = AgentSessionFactory(project=cast.project_a)
    run = ConsolidationRunFactory(project=cast.project_a)
    for subject in (session, run, None):
        llm_complete(
            organization=cast.org_a, purpose="other", system="s", prompt="p", llm=ScriptedLLM(["ok"]), subject=subject
        )
    assert [(c.subject_type, c.subject_id) for c in LlmCall.objects.for_subject(session)] == [
        ("memories.agentsession", session.id)
    ]
    assert [(c.subject_type, c.subject_id) for c in LlmCall.objects.for_subject(run)] == [
        ("consolidation.consolidationrun", run.id)
    ]
    assert LlmCall.objects.filter(subject_type="").count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_run_or_session_of_every_existing_call_both_ways(cast):
    session = AgentSessionFactory(project=cast.project_a)
    run = ConsolidationRunFactory(project=cast.project_a)
    llm_complete(
        organization=cast.org_a, purpose="synthesize", system="s", prompt="p", llm=ScriptedLLM(["ok"]), subject=run
    )
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE_SUBJECT])
        old = (
            MigrationExecutor(connection)
            .loader.project_state([BEFORE_SUBJECT])
            .apps.get_model("reasoningbank", "LlmCall")
        )
        common = {"organization_id": cast.org_a.id, "provider": "p", "model": "m", "input_tokens": 7}
        old.objects.create(purpose="distill", session_id=session.id, **common)
        old.objects.create(purpose="judge", run_id=run.id, **common)
        old.objects.create(purpose="other", **common)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert [c.purpose for c in LlmCall.objects.for_subject(session)] == ["distill"]
    # the call made before the migration back kept its run through the foreign key and back again
    assert sorted(c.purpose for c in LlmCall.objects.for_subject(run)) == ["judge", "synthesize"]
    assert LlmCall.objects.get(purpose="other").subject_type == ""
    assert LlmCall.objects.count() == 4  # nothing lost
