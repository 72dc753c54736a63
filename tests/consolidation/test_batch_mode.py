"""Batch mode for scheduled consolidation (docs/llm-spend.md#batch-mode): with CONSOLIDATION_LLM_BATCH on,
a scheduled run sends the LLM calls of each pass to the provider's batch API (the real SDKs against
respx-mocked endpoints: ``tests/batch_api_stub.py``), waits ``waiting_for_batch``, is queued again by the
poll once the batch ended, and completes from the stored answers; batched calls are metered with their
flag and reserve their tokens first. Expired batches, batches that cannot be sent and servers without a
batch API fall back to direct calls; runs someone starts by hand stay interactive."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import respx
from django.utils import timezone

from consolidation.models import ConsolidationRun
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate
from consolidation.tasks import llm_batches_poll
from reasoningbank.ai.batch_services import LLMDeferred, batch_session, batches_poll
from reasoningbank.errors import Conflict
from reasoningbank.models import LlmBatch, LlmBatchRequest, LlmBudget, LlmBudgetPeriod, LlmCall
from tests.batch_api_stub import BatchApiStub, batch_api_served
from tests.consolidation.test_cycle_failures import RETRY_TITLES, TIMEOUT_TITLES, assert_merged, assert_untouched
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke
from tests.factories import ConsolidationRunFactory
from tests.local_llm_stub import BASE_URL as LOCAL_BASE_URL
from tests.local_llm_stub import LocalServerStub
from tests.respx_httpx2 import serve_httpx2_from

KEYS = {"anthropic": "sk-ant-test", "openai": "sk-test"}


@pytest.fixture
def two_clusters(agent):
    """Two clusters for the synthesis (as in test_cycle_failures): 3 and 2 memories, cosine 0.87."""
    first = [remember(agent, t, spoke(0, n, 0.87)) for n, t in enumerate(TIMEOUT_TITLES, 1)]
    second = [remember(agent, t, spoke(20, 20 + n, 0.87)) for n, t in enumerate(RETRY_TITLES, 1)]
    return first, second


def answers(system: str, prompt: str) -> str:
    """What the provider answers, batched or direct: the scripted consolidation replies."""
    return cycle_llm().script[0](system, prompt)  # type: ignore[operator]


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, settings) -> str:
    settings.LLM_PROVIDER = request.param
    settings.LLM_API_KEY = KEYS[request.param]
    settings.LLM_BASE_URL = None
    settings.LLM_MAX_RETRIES = 0
    settings.CONSOLIDATION_LLM_BATCH = True
    return request.param


@pytest.fixture
def stub(provider) -> Iterator[BatchApiStub]:
    with batch_api_served(BatchApiStub(reply=answers)) as served:
        yield served


def scheduled_run(cast: Any) -> ConsolidationRun:
    return ConsolidationRunFactory(
        project=cast.project_a, trigger=ConsolidationRun.TRIGGER_SCHEDULED, options=run_options_validate().as_dict()
    )


def execute(run: ConsolidationRun) -> ConsolidationRun:
    finished = consolidation_execute(run.id)  # the configured provider, as the worker runs it
    assert finished is not None
    return finished


def poll(django_capture_on_commit_callbacks: Any) -> dict[str, int]:
    with django_capture_on_commit_callbacks():  # the run queued again is handed to the worker (not run here)
        return llm_batches_poll()


def run_to_the_end(run: ConsolidationRun, stub: BatchApiStub, capture: Any) -> tuple[ConsolidationRun, int]:
    """Execute the run, and whenever it waits for a batch, end the batch and poll; the passes it took."""
    for passes in range(1, 8):
        run = execute(run)
        if run.status != ConsolidationRun.STATUS_WAITING_BATCH:
            return run, passes
        stub.end()
        assert poll(capture)["resumed"] == 1
    raise AssertionError("the run never finished")


def test_a_scheduled_run_sends_its_calls_as_a_batch_and_waits_for_it(cast, agent, two_clusters, stub):
    run = execute(scheduled_run(cast))

    assert run.status == "waiting_for_batch" and not run.errors
    assert stub.direct == [] and len(stub.batches) == 1 and stub.requests()
    assert any("sent to the" in w and "batch API" in w for w in run.warnings)
    assert not any("failed" in w for w in run.warnings)  # a deferred call is no failure
    assert_untouched(two_clusters[0] + two_clusters[1])
    (batch,) = LlmBatch.objects.all()
    assert batch.status == "submitted" and batch.request_count == len(stub.requests())
    assert (batch.subject_type, batch.subject_id) == ("consolidation.consolidationrun", run.id)


def test_a_run_waiting_for_its_batch_holds_its_project_s_place(cast, agent, two_clusters, stub):
    execute(scheduled_run(cast))

    with pytest.raises(Conflict, match=r"already waiting_for_batch .*once the LLM provider answered its batch"):
        consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())


def test_the_poll_leaves_the_run_waiting_while_its_batch_is_in_progress(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    run = execute(scheduled_run(cast))

    counts = poll(django_capture_on_commit_callbacks)

    assert counts == {"open": 1, "ended": 0, "failed": 0, "deleted": 0, "resumed": 0}
    assert stub.polls == 1 and stub.downloads == 0
    assert ConsolidationRun.objects.get(pk=run.pk).status == "waiting_for_batch"


def test_once_the_batch_ended_the_poll_queues_the_run_again_and_it_completes_from_the_stored_answers(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    first, second = two_clusters
    run = execute(scheduled_run(cast))
    stub.end()

    with django_capture_on_commit_callbacks() as queued:
        counts = llm_batches_poll()
    assert counts["ended"] == 1 and counts["resumed"] == 1 and len(queued) == 1
    assert ConsolidationRun.objects.get(pk=run.pk).status == "queued"

    finished, passes = run_to_the_end(ConsolidationRun.objects.get(pk=run.pk), stub, django_capture_on_commit_callbacks)

    assert finished.status == "completed", finished.warnings + finished.errors
    assert stub.direct == []  # every answer came from a batch
    # one batch per pass that asked something new (the judge, then both clusters' syntheses with their
    # summaries in one request: docs/consolidation.md#batched-synthesis); the last asked nothing
    assert [len(batch) for batch in stub.batches.values()] == [1, 1] and passes == 2
    assert finished.warnings == [] and finished.llm_calls == 2
    assert_merged(first)
    assert_merged(second)


def test_batched_calls_are_metered_with_their_flag_and_their_reservation_settles(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    run = execute(scheduled_run(cast))
    (batch,) = LlmBatch.objects.all()
    day = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert batch.reserved_tokens > 0 and day.reserved_tokens == batch.reserved_tokens and day.used_tokens == 0

    stub.end()
    poll(django_capture_on_commit_callbacks)

    calls = LlmCall.objects.for_subject(run)
    assert calls.count() == batch.request_count and all(c.batch and c.outcome == "ok" for c in calls)
    assert {(c.provider, c.purpose) for c in calls} == {(batch.provider, "judge")}
    spent = sum(c.input_tokens + c.output_tokens for c in calls)
    assert spent > 0
    day.refresh_from_db()
    assert (day.reserved_tokens, day.used_tokens) == (0, spent)
    assert all(c.created_at == batch.reserved_at for c in calls)  # the day that reserved counts them


def test_an_expired_batch_fails_over_to_direct_calls_and_the_run_completes(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    first, second = two_clusters
    stub.fate = "expired"
    run = execute(scheduled_run(cast))
    asked = [(system, prompt) for _, system, prompt, _ in stub.requests()]
    stub.end()

    assert poll(django_capture_on_commit_callbacks)["resumed"] == 1
    assert set(LlmBatchRequest.objects.values_list("outcome", flat=True)) == {"lost"}
    assert not LlmCall.objects.for_subject(run).exists()  # an expired request is no call: nothing spent

    stub.fate = "succeeded"
    finished, _ = run_to_the_end(ConsolidationRun.objects.get(pk=run.pk), stub, django_capture_on_commit_callbacks)

    assert finished.status == "completed", finished.warnings + finished.errors
    assert set(asked) <= set(stub.direct)  # what the batch did not answer was asked directly
    assert_merged(first)
    assert_merged(second)


def test_a_batch_the_provider_will_not_create_fails_over_to_direct_calls(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    stub.refuse_create = 404
    run = execute(scheduled_run(cast))

    assert run.status == "waiting_for_batch"
    assert any("could not be sent" in w for w in run.warnings)
    (batch,) = LlmBatch.objects.all()
    assert batch.status == "failed" and not LlmBudgetPeriod.objects.filter(reserved_tokens__gt=0).exists()
    assert poll(django_capture_on_commit_callbacks)["resumed"] == 1  # nothing to wait for

    stub.refuse_create = None
    finished, _ = run_to_the_end(ConsolidationRun.objects.get(pk=run.pk), stub, django_capture_on_commit_callbacks)
    assert finished.status == "completed" and stub.direct


def test_a_batch_the_provider_has_not_ended_after_a_day_fails_and_its_calls_go_direct(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    run = execute(scheduled_run(cast))

    counts = batches_poll(now=timezone.now() + timedelta(hours=26))

    assert counts["failed"] == 1
    (batch,) = LlmBatch.objects.all()
    assert batch.status == "failed" and "had not ended" in batch.error
    assert set(batch.requests.values_list("outcome", flat=True)) == {"lost"}
    assert not LlmBudgetPeriod.objects.filter(reserved_tokens__gt=0).exists()
    assert poll(django_capture_on_commit_callbacks)["resumed"] == 1
    assert execute(ConsolidationRun.objects.get(pk=run.pk)).status in ("completed", "waiting_for_batch")
    assert stub.direct


def test_a_batch_that_would_cross_the_daily_cap_waits_for_the_budget_and_sends_nothing(cast, agent, two_clusters, stub):
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=1_000, alert_percent=None)

    run = execute(scheduled_run(cast))

    assert run.status == "waiting_for_budget" and run.resume_at is not None
    assert stub.batches == {} and not LlmBatch.objects.exists()
    assert any("wait for the budget" in w for w in run.warnings)


def test_a_run_started_by_hand_stays_interactive(cast, agent, two_clusters, stub):
    run = run_cycle(agent, cast.project_a, None)

    assert run.status == "completed", run.warnings + run.errors
    assert stub.batches == {} and stub.direct
    assert not LlmCall.objects.filter(batch=True).exists()


def test_with_batch_mode_off_a_scheduled_run_calls_directly(cast, agent, two_clusters, stub, settings):
    settings.CONSOLIDATION_LLM_BATCH = False

    run = execute(scheduled_run(cast))

    assert run.status == "completed" and stub.batches == {} and stub.direct


def test_an_openai_compatible_local_server_without_a_batch_api_gets_direct_calls(cast, agent, two_clusters, settings):
    settings.LLM_PROVIDER, settings.LLM_API_KEY, settings.LLM_BASE_URL = "openai", None, LOCAL_BASE_URL
    settings.LLM_MODEL, settings.LLM_MAX_RETRIES, settings.CONSOLIDATION_LLM_BATCH = "llama3.2", 0, True
    server = LocalServerStub(reply=answers)
    with respx.mock(base_url=LOCAL_BASE_URL) as router, serve_httpx2_from(router):
        router.post("/chat/completions").mock(side_effect=server)

        run = execute(scheduled_run(cast))

    assert run.status == "completed", run.warnings + run.errors
    assert server.requests and not LlmBatch.objects.exists()
    assert_merged(two_clusters[0])


def test_a_run_reads_only_its_own_batches_answers_never_another_run_s_or_organization_s(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    mine = execute(scheduled_run(cast))
    stub.end()
    poll(django_capture_on_commit_callbacks)
    (system, prompt, max_tokens) = stub.requests()[0][1:]
    theirs = ConsolidationRunFactory(project=cast.project_b, trigger=ConsolidationRun.TRIGGER_SCHEDULED)
    api = LlmBatch.objects.get().provider

    own = batch_session(organization=cast.org_a, subject=ConsolidationRun.objects.get(pk=mine.pk))
    other_org = batch_session(organization=cast.org_b, subject=theirs)
    assert own is not None and other_org is not None and own.api.provider == api

    # the same request: answered for the run that asked, deferred (asked anew) for another organization's run
    assert isinstance(own.answer(purpose="judge", system=system, prompt=prompt, max_tokens=max_tokens), str)
    deferred = other_org.answer(purpose="judge", system=system, prompt=prompt, max_tokens=max_tokens)
    assert isinstance(deferred, LLMDeferred)


def test_a_batch_s_answers_are_deleted_a_week_after_it_ended(
    cast, agent, two_clusters, stub, django_capture_on_commit_callbacks
):
    execute(scheduled_run(cast))
    stub.end()
    poll(django_capture_on_commit_callbacks)

    assert batches_poll(now=timezone.now() + timedelta(days=6))["deleted"] == 0
    assert batches_poll(now=timezone.now() + timedelta(days=8))["deleted"] > 0

    assert not LlmBatch.objects.exists() and not LlmBatchRequest.objects.exists()
    assert LlmCall.objects.filter(batch=True).exists()  # the metered calls stay: they are the spend
