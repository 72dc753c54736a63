"""Where webhook events come from (webhooks/receivers.py): each event published by the real code path
that causes it, to the subscriptions of that organization only, after the commit, scrubbed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation import events as consolidation_events
from consolidation import runs as consolidation_runs
from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.promotion.services import promotions_propose
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate, runs_recover_stale
from memories.models import Memory, MemoryLink
from memories.moderation.services import contradiction_resolve, memories_archive, memory_archive
from memories.sessions import services as session_services
from memories.sessions.services import session_process, session_submit
from reasoningbank.ai.llm import NoLLM
from tests.consolidation.promotion_setup import lesson, teams_setup
from tests.consolidation.vectors import (
    contradiction_reply,
    cycle_llm,
    remember,
    run_cycle,
    spoke,
    supersession_reply,
)
from tests.factories import MemoryFactory
from tests.fakes import ScriptedLLM, memory_block
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_event_publish

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
DAY = timedelta(days=1)


@pytest.fixture
def committed(django_capture_on_commit_callbacks, enqueued, monkeypatch):
    """A block whose on-commit callbacks run at its end, as after a real commit."""
    monkeypatch.setattr(session_services, "session_enqueue", lambda *args, **kwargs: None)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def sent(event_type: str) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event_type=event_type).order_by("created_at"))


def test_recording_a_memory_publishes_memory_created_once_committed(cast, agent, subscribe, committed, enqueued):
    subscription = subscribe(["memory.created"])
    with committed():
        memory = MemoryFactory(principal=agent, title="Pin the base image digest")
        assert not sent("memory.created")  # nothing before the commit
    (delivery,) = sent("memory.created")
    assert delivery.subscription == subscription and delivery.organization == cast.org_a
    data = delivery.payload["data"]["memory"]
    assert data["id"] == memory.id and data["title"] == "Pin the base image digest" and data["project"] == "web-app"
    assert delivery.payload["type"] == "memory.created" and delivery.payload["id"] == delivery.event_id
    assert enqueued == [(delivery.id, 0)]


def test_an_event_reaches_only_subscriptions_that_asked_for_it(agent, subscribe, committed):
    subscribe(["dispute.opened"])
    with committed():
        MemoryFactory(principal=agent, title="Pin the base image digest")
    assert not WebhookDelivery.objects.exists()


def test_events_of_one_organization_never_reach_another_organizations_subscriptions(
    cast, make_token, subscribe, committed
):
    acme = subscribe(["memory.created"])
    globex = subscribe(["memory.created"], org=cast.org_b)
    _, globex_agent = make_token(cast.org_b, projects=[cast.project_b])
    with committed():
        globex_memory = MemoryFactory(principal=globex_agent, title="Globex's own lesson")
    (delivery,) = sent("memory.created")
    assert delivery.subscription == globex and delivery.organization == cast.org_b
    assert delivery.payload["organization"] == "globex" and delivery.payload["data"]["memory"]["id"] == globex_memory.id
    assert not WebhookDelivery.objects.filter(subscription=acme).exists()


def test_a_merge_publishes_memory_merged_with_the_memory_they_went_into(cast, agent, subscribe, committed):
    subscribe(["memory.merged", "memory.superseded"])
    kept = MemoryFactory(principal=agent, title="Retry network calls with backoff")
    dupe = MemoryFactory(principal=agent, title="Retry network calls with exponential backoff")
    with committed():
        memories_archive(
            organization=cast.org_a,
            memory_ids=[dupe.id],
            reason=Memory.ARCHIVED_DUPLICATE,
            into=kept,
            data={"run": "run_x"},
        )
    (delivery,) = sent("memory.merged")
    assert delivery.payload["data"] == {
        "memory_ids": [dupe.id],
        "reason": "duplicate",
        "into": kept.id,
        "merges": [{"into": kept.id, "memory_ids": [dupe.id]}],
        "run": "run_x",
    }
    assert not sent("memory.superseded")


def test_duplicates_merged_by_a_run_say_which_survivor_each_went_into(cast, agent, subscribe, committed, monkeypatch):
    from webhooks import receivers

    monkeypatch.setattr(receivers, "LINK_QUERY_IDS", 2)  # the links read in several queries, as for a large run
    subscribe(["memory.merged"])
    # two groups of near-identical memories on two axes; the most confident of each group stays
    kept_cache = remember(agent, "Cache the Docker build layers", spoke(0, 1, 0.97), confidence=0.9)
    cache = remember(agent, "Cache Docker build layers in CI", spoke(0, 2, 0.97), confidence=0.6)
    caching = remember(agent, "Docker layer caching speeds up CI", spoke(0, 3, 0.97), confidence=0.5)
    kept_go = remember(agent, "Services are written in Go", spoke(10, 11, 0.97), confidence=0.9)
    golang = remember(agent, "Services use Golang", spoke(10, 12, 0.97), confidence=0.4)
    with committed():
        run = run_cycle(agent, cast.project_a, ScriptedLLM())
    assert run.status == ConsolidationRun.STATUS_COMPLETED and run.counters["duplicates_merged"] == 3, run.errors
    (delivery,) = sent("memory.merged")  # one event for the run's duplicates, not one per group
    data = delivery.payload["data"]
    survivor_of = {memory_id: merge["into"] for merge in data["merges"] for memory_id in merge["memory_ids"]}
    assert survivor_of == {cache.id: kept_cache.id, caching.id: kept_cache.id, golang.id: kept_go.id}
    assert sorted(data["memory_ids"]) == sorted(survivor_of)  # the key receivers read before, unchanged
    assert data["into"] is None and data["reason"] == "duplicate" and data["run"] == run.id  # several survivors


def test_a_memory_merged_restored_and_merged_again_is_reported_with_this_runs_survivor(
    cast, agent, subscribe, committed
):
    subscribe(["memory.merged"])
    first, second = (MemoryFactory(principal=agent, title=f"Lesson {n}") for n in (1, 2))
    dupe = MemoryFactory(principal=agent, title="Lesson 1 again")
    runs = []
    for _ in range(2):  # one queued run per project at a time: the first is over before the second
        runs.append(consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate()))
        ConsolidationRun.objects.filter(pk=runs[-1].pk).update(status=ConsolidationRun.STATUS_COMPLETED)
    run_a, run_b = runs
    for kept, run in ((first, run_a), (second, run_b)):
        MemoryLink.objects.create(
            organization=cast.org_a, source=kept, target=dupe, kind=MemoryLink.KIND_DUPLICATES, run=run
        )
    with committed():
        memories_archive(
            organization=cast.org_a, memory_ids=[dupe.id], reason=Memory.ARCHIVED_DUPLICATE, data={"run": run_a.id}
        )
    assert sent("memory.merged")[-1].payload["data"]["merges"] == [{"into": first.id, "memory_ids": [dupe.id]}]


def test_a_memory_archived_as_a_duplicate_by_hand_has_no_survivor_to_name(cast, agent, subscribe, committed):
    subscribe(["memory.merged"])
    dupe = MemoryFactory(principal=agent, title="Said twice")
    with committed():
        memory_archive(principal=cast.principal(cast.alice), memory=dupe, reason=Memory.ARCHIVED_DUPLICATE)
    (delivery,) = sent("memory.merged")
    data = delivery.payload["data"]
    assert (data["into"], data["merges"]) == (None, [{"into": None, "memory_ids": [dupe.id]}])


def test_a_memory_the_judge_superseded_names_the_newer_memory_that_replaced_it(cast, agent, subscribe, committed):
    subscribe(["memory.superseded"])
    older = remember(agent, "Deploys run on Jenkins", spoke(0, 1, 0.75), created_at=timezone.now() - DAY)
    newer = remember(agent, "Deploys moved to GitHub Actions", spoke(0, 2, 0.75))
    llm = cycle_llm(supersession=supersession_reply(True), contradiction=contradiction_reply(False))
    with committed():
        run = run_cycle(agent, cast.project_a, llm)
    assert run.status == ConsolidationRun.STATUS_COMPLETED and run.counters["supersessions"] == 1, run.errors
    (delivery,) = sent("memory.superseded")
    assert delivery.payload["data"] == {"memory_ids": [older.id], "by": newer.id, "run": run.id}


def test_opening_and_resolving_a_dispute_publish_their_events_and_the_superseded_memory(
    cast, agent, subscribe, committed
):
    subscribe(["dispute.opened", "dispute.resolved", "memory.superseded"])
    first = MemoryFactory(principal=agent, title="Use tabs in Makefiles")
    second = MemoryFactory(principal=agent, title="Never use tabs in Makefiles")
    with committed():
        link = MemoryLink.objects.create(
            organization=cast.org_a,
            source=first,
            target=second,
            kind=MemoryLink.KIND_CONTRADICTS,
            reason="they disagree",
        )
    (opened,) = sent("dispute.opened")
    assert opened.payload["data"]["dispute"] == {
        "id": link.pk,
        "first": first.id,
        "second": second.id,
        "reason": "they disagree",
    }
    with committed():
        contradiction_resolve(principal=cast.principal(cast.alice), link=link, resolution="keep_first")
    (resolved,) = sent("dispute.resolved")
    assert resolved.payload["data"]["dispute"]["states"] == {first.id: "active", second.id: "archived"}
    (superseded,) = sent("memory.superseded")
    assert superseded.payload["data"]["memory_ids"] == [second.id]
    assert superseded.payload["data"]["by"] == first.id


def test_a_promotion_proposal_publishes_promotion_proposed(cast, subscribe, committed):
    teams_setup(cast)
    alice = cast.principal(cast.alice)
    subscribe(["promotion.proposed"])
    lesson(alice, "web-app", 1)
    lesson(alice, "api", 2)
    with committed():
        promotions_propose(principal=alice)
    item = ReviewItem.objects.get(kind=ReviewItem.KIND_PROMOTION)
    (delivery,) = sent("promotion.proposed")
    assert delivery.payload["data"]["review_id"] == item.pk and delivery.payload["data"]["status"] == "pending"
    assert delivery.payload["data"]["memory"]["id"] == item.first_id
    assert delivery.payload["data"]["memory"]["team"] == "platform"


def test_a_finished_consolidation_run_publishes_run_finished(cast, agent, subscribe, committed):
    subscribe(["consolidation.run_finished", "consolidation.run_failed"])
    MemoryFactory(principal=agent, title="Pin the base image digest")
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())
    with committed():
        finished = consolidation_execute(run.id, llm=NoLLM())
    assert finished.status == ConsolidationRun.STATUS_COMPLETED
    (delivery,) = sent("consolidation.run_finished")
    body = delivery.payload["data"]["run"]
    assert body["id"] == run.id and body["status"] == "completed" and body["project"] == "web-app"
    assert not sent("consolidation.run_failed")


def test_a_failed_consolidation_run_publishes_run_failed(cast, agent, subscribe, committed, monkeypatch):
    subscribe(["consolidation.run_finished", "consolidation.run_failed"])
    MemoryFactory(principal=agent, title="Pin the base image digest")
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())

    def broken(state, phase):
        raise RuntimeError("the phase broke")

    monkeypatch.setattr(consolidation_runs, "phase_run", broken)
    with committed():
        consolidation_execute(run.id, llm=NoLLM())
    (delivery,) = sent("consolidation.run_failed")
    assert delivery.payload["data"]["run"]["status"] == "failed"
    assert "the phase broke" in " ".join(delivery.payload["data"]["run"]["errors"])
    assert not sent("consolidation.run_finished")


def test_a_run_no_worker_picked_up_publishes_run_failed_when_the_sweep_fails_it(
    cast, agent, subscribe, committed, settings
):
    subscribe(["consolidation.run_failed"])
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 60
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())
    ConsolidationRun.objects.filter(pk=run.pk).update(created_at=run.created_at - timedelta(minutes=5))
    with committed():
        assert runs_recover_stale() == 1
    (delivery,) = sent("consolidation.run_failed")
    body = delivery.payload["data"]["run"]
    assert body["id"] == run.id and body["status"] == "failed"
    assert "no worker picked this run up" in " ".join(body["errors"])


def test_a_contradiction_the_judge_found_is_published_scrubbed_of_secrets(cast, agent, subscribe, committed):
    subscribe(["contradiction.found"])
    run = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())
    found = [{"first": "mem_a", "second": "mem_b", "confidence": 0.9, "explanation": f"one says the key is {AWS_KEY}"}]
    with committed():
        consolidation_events.contradiction_detected.send(sender=ConsolidationRun, run=run, contradictions=found)
    (delivery,) = sent("contradiction.found")
    (item,) = delivery.payload["data"]["contradictions"]
    assert AWS_KEY not in str(delivery.payload) and "[REDACTED:" in item["explanation"]
    assert (item["first"], item["second"]) == ("mem_a", "mem_b")


def test_a_distilled_session_publishes_session_distilled_with_its_memories(agent, subscribe, committed):
    subscribe(["session.distilled", "session.failed"])
    with committed():
        session = session_submit(
            principal=agent, session_id="s-1", outcome="success", trace="user: hi\nagent: fixed"
        ).session
    reply = memory_block(1, "Wrap DB calls in a timeout", "Hangs without one", "Use context.WithTimeout.")
    with committed():
        done = session_process(session.id, llm=ScriptedLLM([reply]))
    assert done.status == "done"
    (delivery,) = sent("session.distilled")
    body = delivery.payload["data"]["session"]
    assert body["external_id"] == "s-1" and body["status"] == "done"
    assert body["memory_ids"] == list(Memory.objects.filter(source_session=done).values_list("id", flat=True))
    assert not sent("session.failed")


def test_a_session_handed_in_again_after_its_distillation_publishes_session_distilled_once_per_round(
    agent, subscribe, committed
):
    subscribe(["session.distilled"])
    trace = "user: the checkout test hangs\nagent: added a timeout around the DB call"
    with committed():
        session = session_submit(principal=agent, session_id="s-3", outcome="success", trace=trace).session
    first = memory_block(1, "Wrap DB calls in a timeout", "When tests hang on the DB", "Use context.WithTimeout.")
    second = memory_block(1, "Default missing promo codes", "When a promo lookup fails", "Use PROMOS.get(code).")
    with committed():
        session_process(session.id, llm=ScriptedLLM([first]))
    with committed():  # the session resumed: handed in again, grown at its end
        session_submit(principal=agent, session_id="s-3", outcome="success", trace=trace + "\nuser: promo fails too")
    with committed():
        session_process(session.id, llm=ScriptedLLM([second]))

    one, two = (delivery.payload["data"]["session"] for delivery in sent("session.distilled"))
    titles = dict(Memory.objects.filter(source_session=session).values_list("id", "title"))
    assert (one["rounds"], two["rounds"]) == (1, 2)
    assert [titles[i] for i in one["round_memory_ids"]] == ["Wrap DB calls in a timeout"]
    assert [titles[i] for i in two["round_memory_ids"]] == ["Default missing promo codes"]
    assert two["memory_ids"] == sorted(titles)  # all the session's memories, every round's


def test_a_session_that_cannot_be_distilled_publishes_session_failed(agent, subscribe, committed):
    subscribe(["session.distilled", "session.failed"])
    with committed():
        session = session_submit(
            principal=agent, session_id="s-2", outcome="success", trace="user: hi\nagent: ok"
        ).session
    with committed():
        failed = session_process(session.id, llm=ScriptedLLM(["garbage one", "garbage two"]))
    assert failed.status == "failed"
    (delivery,) = sent("session.failed")
    assert "could not be parsed" in delivery.payload["data"]["session"]["error"]


def test_every_string_of_a_payload_is_scrubbed_and_the_json_stays_intact(cast, subscribe, committed):
    subscribe(["memory.created"])
    with committed():
        (delivery,) = webhook_event_publish(
            organization_id=cast.org_a.pk,
            event_type="memory.created",
            data={"memory": {"title": f'config "{AWS_KEY}"', "tags": [f"aws_secret_access_key={AWS_KEY}"]}},
        )
    delivery.refresh_from_db()
    assert AWS_KEY not in str(delivery.payload)
    assert delivery.payload["data"]["memory"]["title"].startswith('config "[REDACTED:')


def test_a_failure_to_publish_never_fails_the_write_that_caused_the_event(agent, subscribe, committed, monkeypatch):
    from webhooks import receivers

    subscribe(["memory.created"])

    def broken(**kwargs):
        raise RuntimeError("webhooks are down")

    monkeypatch.setattr(receivers, "webhook_event_publish", broken)
    with committed():
        memory = MemoryFactory(principal=agent, title="Still recorded")
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_an_organization_without_subscribers_pays_one_query_per_event_and_no_payload(
    cast, subscribe, django_assert_num_queries
):
    subscribe(["memory.created"], org=cast.org_b)  # another organization's subscription changes nothing here

    def payload():
        raise AssertionError("the payload is built only for a subscriber")

    with django_assert_num_queries(1):
        assert webhook_event_publish(organization_id=cast.org_a.pk, event_type="memory.created", data=payload) == []


def test_an_llm_spend_past_the_alert_threshold_publishes_llm_budget_alert_once_to_its_organization(
    cast, subscribe, committed
):
    from reasoningbank.ai.llm import LLMResult
    from reasoningbank.ai.metered import llm_complete
    from reasoningbank.models import LlmBudget

    class Spending:
        provider, model = "fake", "fixed-1"

        def complete(self, **kwargs):
            return LLMResult("ok", "fake", "fixed-1", 300, 100, 1.0, 1)

    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=2_000, alert_percent=50)
    subscribe(["llm.budget_alert"])
    globex = subscribe(["llm.budget_alert"], org=cast.org_b)
    for _ in range(4):  # 400 tokens each: the third call takes the day to 1,200, past 1,000
        with committed():
            llm_complete(
                # a prompt and a reply bound that can spend the 400 tokens reported (a call is charged at
                # most what it could spend: docs/llm-spend.md#over-reports)
                organization=cast.org_a,
                purpose="distill",
                system="s",
                prompt="p" * 600,
                max_tokens=200,
                llm=Spending(),
            )
    (delivery,) = sent("llm.budget_alert")
    assert delivery.organization == cast.org_a and delivery.subscription != globex
    budget = delivery.payload["data"]["budget"]
    assert (budget["cap"], budget["source"], budget["limit"], budget["used"], budget["threshold"]) == (
        "daily",
        "organization",
        2_000,
        1_200,
        1_000,
    )


def test_a_token_suspended_after_flagged_writes_publishes_security_token_suspended_once_to_its_organization(
    cast, make_token, subscribe, committed, settings
):
    from accounts.write_limits.services import flagged_write_note

    settings.WRITE_SUSPEND_FLAGGED = 2
    subscribe(["security.token_suspended"])
    globex = subscribe(["security.token_suspended"], org=cast.org_b)
    _, leaked = make_token(cast.org_a, label="leaked laptop")
    with committed():
        flagged_write_note(leaked)
        assert not sent("security.token_suspended")
        flagged_write_note(leaked)
        assert not sent("security.token_suspended")  # nothing before the commit
    with committed():
        flagged_write_note(leaked)  # already suspended: no second event
    (delivery,) = sent("security.token_suspended")
    assert delivery.organization == cast.org_a and delivery.subscription != globex
    suspension = delivery.payload["data"]["suspension"]
    assert suspension["kind"] == "token" and suspension["id"] == leaked.token.pk
    assert suspension["prefix"] == leaked.token.prefix and suspension["token_label"] == "leaked laptop"
    assert suspension["flagged_writes"] == 2 and suspension["window_seconds"] == 600
    assert "instruction-smell detector" in suspension["reason"]
    assert suspension["unsuspend"] == f"POST /api/v1/tokens/{leaked.token.pk}/unsuspend"


def test_a_suspension_rolled_back_with_its_write_publishes_nothing(cast, make_token, subscribe, committed, settings):
    from django.db import transaction

    from accounts.write_limits.services import flagged_write_note

    settings.WRITE_SUSPEND_FLAGGED = 1
    subscribe(["security.token_suspended"])
    _, leaked = make_token(cast.org_a)
    with committed():
        try:
            with transaction.atomic():
                flagged_write_note(leaked)
                raise RuntimeError("the flagged write failed")
        except RuntimeError:
            pass
    assert not sent("security.token_suspended")
    leaked.token.refresh_from_db()
    assert leaked.token.write_suspended_at is None
