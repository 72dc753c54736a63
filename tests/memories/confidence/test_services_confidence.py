"""The self-improving confidence system (docs/confidence.md) through the services and the real database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import AuditEvent
from memories.confidence.services import confidence_recompute_all, memory_feedback, memory_outcome, signals_rollup
from memories.models import Memory, MemorySignal, MemorySignalAggregate, ProjectSignalWeights
from memories.search.contracts import SearchInput
from memories.search.services import memory_search_use
from reasoningbank.errors import Forbidden, InvalidInput, NotFound
from tests.factories import ProjectFactory, TeamFactory, memory_recorder

TITLE = "Retry flaky network calls with jittered backoff"


record = memory_recorder(
    title=TITLE,
    description="When an HTTP client call to a third-party API times out intermittently",
    content="Wrap the call in a retry loop with exponential backoff and random jitter, capped at five tries.",
)


def weights(explicit=(7, 3), usage=(5, 5), outcome=(5, 5), stability=(5, 5)):
    """Normalised Beta means, computed by hand (the services must agree with the formula of
    docs/confidence.md#learned-weights), over the four signal types."""
    raw = [a / (a + b) for a, b in (explicit, usage, outcome, stability)]
    total = sum(raw)
    return [r / total for r in raw]


def row_for(org, project):
    return ProjectSignalWeights.objects.get(organization=org, project=project)


def searched(principal, query=TITLE, project="web-app"):
    return memory_search_use(principal=principal, search=SearchInput(query=query, project=project).to_query())


@pytest.fixture
def token(cast, make_token):
    return make_token(cast.org_a, projects=[cast.project_a])[1]


@pytest.fixture
def memory(token):
    return record(token)


# --- explicit feedback ---------------------------------------------------------------------------


def test_helpful_feedback_raises_confidence_by_the_learned_explicit_weight(token, memory):
    result = memory_feedback(principal=token, memory=memory, helpful=True)
    # no usage/outcome/stability signal yet: each "predicted unhelpful" and was wrong, so their betas grew first
    w_explicit, *_ = weights(usage=(5, 6), outcome=(5, 6), stability=(5, 6))
    expected = (1.6 + w_explicit) / (2.0 + w_explicit)
    assert result.previous_confidence == pytest.approx(0.8)
    assert result.new_confidence == pytest.approx(expected)
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.confidence == pytest.approx(expected) and stored.confidence > 0.8
    assert stored.alpha == pytest.approx(1.6 + w_explicit)
    assert stored.beta == pytest.approx(0.4)


def test_unhelpful_feedback_lowers_confidence(token, memory):
    result = memory_feedback(principal=token, memory=memory, helpful=False)
    w_explicit, *_ = weights(usage=(6, 5), outcome=(6, 5), stability=(6, 5))
    expected = 1.6 / (2.0 + w_explicit)
    assert result.new_confidence == pytest.approx(expected)
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.confidence == pytest.approx(expected) and stored.confidence < 0.8
    assert stored.beta == pytest.approx(0.4 + w_explicit)


def test_feedback_records_an_explicit_signal_with_comment_and_the_confidence_after(cast, token, memory):
    result = memory_feedback(principal=token, memory=memory, helpful=True, comment="  saved my afternoon ")
    signal = MemorySignal.objects.get(memory=memory)
    assert (signal.type, signal.positive) == ("explicit", True)
    assert signal.comment == "saved my afternoon"
    assert signal.project == cast.project_a
    assert signal.organization == cast.org_a
    assert signal.actor == token.actor_label
    assert signal.confidence_after == pytest.approx(result.new_confidence)


def test_feedback_writes_an_audit_event_with_the_confidence_change(token, memory):
    result = memory_feedback(principal=token, memory=memory, helpful=False, comment="outdated")
    event = AuditEvent.objects.get(verb="memory.feedback", target_id=memory.id)
    assert event.data["helpful"] is False
    assert event.data["comment"] == "outdated"
    assert event.data["from"] == pytest.approx(0.8)
    assert event.data["to"] == pytest.approx(round(result.new_confidence, 4))


def test_feedback_on_a_memory_returned_by_a_search_that_was_helpful_raises_usage_alpha(cast, token, memory):
    result = searched(token)
    assert [hit.memory.id for hit in result.hits] == [memory.id]
    assert MemorySignal.objects.filter(memory=memory, type="usage", positive=True).count() == 1

    memory_feedback(principal=token, memory=memory, helpful=True)

    row = row_for(cast.org_a, cast.project_a)
    assert (row.usage_alpha, row.usage_beta) == (6.0, 5.0)  # usage predicted "helpful" and was right
    assert (row.outcome_alpha, row.outcome_beta) == (5.0, 6.0)  # no outcome signal: predicted wrong
    assert (row.explicit_alpha, row.explicit_beta) == (7.0, 3.0)  # explicit is the ground truth, never learns


def test_feedback_on_a_memory_returned_by_a_search_that_was_unhelpful_raises_usage_beta(cast, token, memory):
    searched(token)
    memory_feedback(principal=token, memory=memory, helpful=False)
    row = row_for(cast.org_a, cast.project_a)
    assert (row.usage_alpha, row.usage_beta) == (5.0, 6.0)
    assert (row.outcome_alpha, row.outcome_beta) == (6.0, 5.0)


def test_helpful_feedback_on_a_memory_never_searched_teaches_that_usage_missed_it(cast, token, memory):
    memory_feedback(principal=token, memory=memory, helpful=True)
    row = row_for(cast.org_a, cast.project_a)
    assert (row.usage_alpha, row.usage_beta) == (5.0, 6.0)


def test_a_successful_outcome_followed_by_helpful_feedback_raises_outcome_alpha(cast, token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_feedback(principal=token, memory=memory, helpful=True)
    row = row_for(cast.org_a, cast.project_a)
    assert (row.outcome_alpha, row.outcome_beta) == (6.0, 5.0)


def test_learning_in_one_project_leaves_another_projects_weights_alone(cast, make_token, token, memory):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    _, mobile_token = make_token(cast.org_a, projects=[mobile])
    other = record(mobile_token)
    memory_feedback(principal=mobile_token, memory=other, helpful=True)
    memory_feedback(principal=token, memory=memory, helpful=False)
    assert row_for(cast.org_a, mobile).usage_beta == 6.0
    assert row_for(cast.org_a, cast.project_a).usage_alpha == 6.0
    assert row_for(cast.org_a, cast.project_a).usage_beta == 5.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"helpful": "yes"}, "helpful"),
        ({"helpful": 1}, "helpful"),
        ({"helpful": None}, "helpful"),
        ({"helpful": True, "comment": "x" * 2001}, "comment"),
        ({"helpful": True, "comment": 7}, "comment"),
    ],
)
def test_invalid_feedback_names_the_field_and_changes_nothing(token, memory, kwargs, field):
    with pytest.raises(InvalidInput) as excinfo:
        memory_feedback(principal=token, memory=memory, **kwargs)
    assert excinfo.value.field == field
    assert not MemorySignal.objects.exists()
    assert not AuditEvent.objects.filter(verb="memory.feedback").exists()
    assert not ProjectSignalWeights.objects.exists()
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(0.8)


def test_a_viewer_cannot_give_feedback(cast, memory):
    with pytest.raises(Forbidden):
        memory_feedback(principal=cast.principal(cast.bob), memory=memory, helpful=False)
    assert not MemorySignal.objects.exists()


def test_another_orgs_principal_cannot_give_feedback_on_a_memory_it_cannot_see(cast, make_token, memory):
    _, stranger = make_token(cast.org_b)
    with pytest.raises((NotFound, Forbidden)):
        memory_feedback(principal=stranger, memory=memory, helpful=False)
    assert not MemorySignal.objects.exists()
    assert not ProjectSignalWeights.objects.exists()
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(0.8)


def test_another_orgs_principal_cannot_report_an_outcome_on_a_memory_it_cannot_see(cast, make_token, memory):
    _, stranger = make_token(cast.org_b)
    with pytest.raises((NotFound, Forbidden)):
        memory_outcome(principal=stranger, memory=memory, succeeded=False)
    assert not MemorySignal.objects.exists()
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(0.8)


# --- outcomes ------------------------------------------------------------------------------------


def test_a_successful_outcome_raises_confidence_and_keeps_the_session_id(token, memory):
    result = memory_outcome(principal=token, memory=memory, succeeded=True, session_id="ses-42")
    _, _, w_outcome, _ = weights()
    expected = (1.6 + w_outcome) / (2.0 + w_outcome)
    assert result.new_confidence == pytest.approx(expected)
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(expected)
    signal = MemorySignal.objects.get(memory=memory)
    assert (signal.type, signal.positive, signal.session_id) == ("outcome", True, "ses-42")
    assert signal.confidence_after == pytest.approx(expected)


def test_a_failed_outcome_lowers_confidence_and_stamps_it_on_the_signal(token, memory):
    result = memory_outcome(principal=token, memory=memory, succeeded=False, session_id="ses-43")
    _, _, w_outcome, _ = weights()
    expected = 1.6 / (2.0 + w_outcome)
    assert result.new_confidence == pytest.approx(expected) and result.new_confidence < 0.8
    signal = MemorySignal.objects.get(memory=memory)
    assert signal.confidence_after == pytest.approx(expected)
    assert signal.session_id == "ses-43"


def test_outcomes_do_not_teach_the_weights(cast, token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    row = row_for(cast.org_a, cast.project_a)
    assert (row.usage_alpha, row.usage_beta, row.outcome_alpha, row.outcome_beta) == (5.0, 5.0, 5.0, 5.0)
    assert (row.stability_alpha, row.stability_beta) == (5.0, 5.0)


def test_each_signal_stamps_its_own_confidence_after(token, memory):
    first = memory_outcome(principal=token, memory=memory, succeeded=True)
    second = memory_outcome(principal=token, memory=memory, succeeded=True)
    stamps = list(
        MemorySignal.objects.filter(memory=memory)
        .order_by("created_at", "id")
        .values_list("confidence_after", flat=True)
    )
    assert stamps == [pytest.approx(first.new_confidence), pytest.approx(second.new_confidence)]
    assert second.new_confidence > first.new_confidence


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"succeeded": "true"}, "succeeded"),
        ({"succeeded": 0}, "succeeded"),
        ({"succeeded": True, "session_id": "s" * 201}, "session_id"),
        ({"succeeded": True, "session_id": ["s"]}, "session_id"),
    ],
)
def test_invalid_outcomes_name_the_field_and_change_nothing(token, memory, kwargs, field):
    with pytest.raises(InvalidInput) as excinfo:
        memory_outcome(principal=token, memory=memory, **kwargs)
    assert excinfo.value.field == field
    assert not MemorySignal.objects.exists()


# --- rollup --------------------------------------------------------------------------------------


def _age_signals(days, **filters):
    MemorySignal.objects.filter(**filters).update(created_at=timezone.now() - timedelta(days=days))


def test_rollup_folds_old_events_into_aggregates_and_keeps_confidence(cast, token, memory):
    searched(token)
    memory_feedback(principal=token, memory=memory, helpful=True)
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_outcome(principal=token, memory=memory, succeeded=False)
    _age_signals(40)
    before = Memory.objects.get(pk=memory.pk)
    weights_before = row_for(cast.org_a, cast.project_a)

    summary = signals_rollup()

    assert summary == {"folded": 4, "memories": 1}
    assert not MemorySignal.objects.filter(memory=memory).exists()
    agg = MemorySignalAggregate.objects.get(memory=memory)
    assert agg.organization == cast.org_a
    assert (agg.explicit_pos, agg.explicit_neg) == (1, 0)
    assert (agg.usage_pos, agg.usage_neg) == (1, 0)
    assert (agg.outcome_pos, agg.outcome_neg) == (1, 1)
    after = Memory.objects.get(pk=memory.pk)
    assert after.confidence == pytest.approx(before.confidence)
    assert (after.alpha, after.beta) == (pytest.approx(before.alpha), pytest.approx(before.beta))
    weights_after = row_for(cast.org_a, cast.project_a)
    assert (weights_after.usage_alpha, weights_after.usage_beta) == (
        weights_before.usage_alpha,
        weights_before.usage_beta,
    )


def test_rollup_leaves_events_newer_than_30_days_in_the_log(token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_outcome(principal=token, memory=memory, succeeded=False)
    old = MemorySignal.objects.filter(memory=memory, positive=True).get()
    _age_signals(31, pk=old.pk)
    _age_signals(29, positive=False)
    before = Memory.objects.get(pk=memory.pk).confidence

    assert signals_rollup() == {"folded": 1, "memories": 1}

    remaining = MemorySignal.objects.get(memory=memory)
    assert remaining.positive is False
    agg = MemorySignalAggregate.objects.get(memory=memory)
    assert (agg.outcome_pos, agg.outcome_neg) == (1, 0)
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(before)


def test_rollup_with_nothing_old_changes_nothing(token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    assert signals_rollup() == {"folded": 0, "memories": 0}
    assert MemorySignal.objects.count() == 1
    assert not MemorySignalAggregate.objects.exists()


def test_a_second_rollup_adds_to_the_existing_aggregate(token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    _age_signals(40)
    signals_rollup()
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_feedback(principal=token, memory=memory, helpful=False)
    _age_signals(35)
    before = Memory.objects.get(pk=memory.pk).confidence

    signals_rollup()

    agg = MemorySignalAggregate.objects.get(memory=memory)
    assert (agg.outcome_pos, agg.explicit_neg) == (2, 1)
    assert not MemorySignal.objects.exists()
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(before)


def test_rolled_up_events_are_counted_once_by_a_full_recompute(token, memory):
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_outcome(principal=token, memory=memory, succeeded=True)
    _age_signals(40)
    signals_rollup()
    before = Memory.objects.get(pk=memory.pk).confidence
    assert confidence_recompute_all() == 1
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(before)


def test_rollup_batches_cover_every_old_event(token, memory):
    for succeeded in (True, False, True, True, False):
        memory_outcome(principal=token, memory=memory, succeeded=succeeded)
    _age_signals(45)
    assert signals_rollup(batch=2)["folded"] == 5
    agg = MemorySignalAggregate.objects.get(memory=memory)
    assert (agg.outcome_pos, agg.outcome_neg) == (3, 2)


# --- recompute with learned weights ----------------------------------------------------------------


def test_recompute_all_re_weighs_old_evidence_with_the_current_weights(cast, token, memory):
    memory_feedback(principal=token, memory=memory, helpful=True)
    before = Memory.objects.get(pk=memory.pk).confidence
    ProjectSignalWeights.objects.filter(organization=cast.org_a, project=cast.project_a).update(
        explicit_alpha=9, explicit_beta=1, usage_alpha=1, usage_beta=9, outcome_alpha=1, outcome_beta=9
    )

    assert confidence_recompute_all() == 1

    # stability keeps what the helpful feedback taught it (no stability signal: predicted wrong)
    w_explicit, *_ = weights(explicit=(9, 1), usage=(1, 9), outcome=(1, 9), stability=(5, 6))
    after = Memory.objects.get(pk=memory.pk)
    assert after.confidence == pytest.approx((1.6 + w_explicit) / (2.0 + w_explicit))
    assert after.confidence > before
    assert after.alpha == pytest.approx(1.6 + w_explicit)


def row_locations(*memories):
    """Where each memory's row version sits (its ``ctid``): PostgreSQL writes a new version, at a new
    place, whenever a row is updated, even to the values it already held."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, ctid::text FROM memories_memory WHERE id = ANY(%s)", [[m.pk for m in memories]])
        return dict(cursor.fetchall())


def test_recompute_all_rewrites_only_the_memories_whose_confidence_changed(cast, token, memory):
    untouched = record(token, title="Pin the base image by digest", content="Use the sha256 digest in FROM.")
    memory_feedback(principal=token, memory=memory, helpful=True)
    confidence_recompute_all()
    before = row_locations(memory, untouched)
    untouched_confidence = Memory.objects.get(pk=untouched.pk).confidence
    # new weights change the confidence of the memory with evidence, not that of the one without
    ProjectSignalWeights.objects.filter(organization=cast.org_a, project=cast.project_a).update(
        explicit_alpha=9, explicit_beta=1
    )

    assert confidence_recompute_all() == 2

    after = row_locations(memory, untouched)
    assert after[memory.pk] != before[memory.pk]
    assert after[untouched.pk] == before[untouched.pk]
    assert Memory.objects.get(pk=untouched.pk).confidence == pytest.approx(untouched_confidence)


def test_recompute_all_covers_memories_of_every_org(cast, make_token, token, memory):
    _, other = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(other)
    memory_outcome(principal=other, memory=theirs, succeeded=False)
    Memory.objects.update(confidence=0.5)
    assert confidence_recompute_all(batch=1) == 2
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx(0.8)
    _, _, w_outcome, _ = weights()
    assert Memory.objects.get(pk=theirs.pk).confidence == pytest.approx(1.6 / (2.0 + w_outcome))


# --- team- and org-scoped memories learn in the org-wide row ---------------------------------------


@pytest.fixture
def team(cast):
    cast.org_a.plan = "teams"
    cast.org_a.save()
    team = TeamFactory(organization=cast.org_a, slug="platform")
    cast.project_a.team = team
    cast.project_a.save()
    return team


def test_feedback_on_an_org_memory_teaches_the_org_wide_weights_row(cast, make_token, token):
    _, admin = make_token(cast.org_a)
    org_memory = record(admin, scope="org", title="Org-wide convention for retries")
    memory_feedback(principal=token, memory=org_memory, helpful=True)
    org_row = ProjectSignalWeights.objects.get(organization=cast.org_a, project__isnull=True)
    assert (org_row.usage_alpha, org_row.usage_beta) == (5.0, 6.0)
    assert not ProjectSignalWeights.objects.filter(project=cast.project_a).exists()


def test_feedback_on_a_team_memory_teaches_the_org_wide_weights_row(cast, make_token, token, team):
    _, admin = make_token(cast.org_a)
    team_memory = record(admin, scope="team", project="web-app", title="Team convention for retries")
    assert team_memory.scope == "team"
    searched(token, query=team_memory.title)
    memory_feedback(principal=token, memory=team_memory, helpful=True)
    org_row = ProjectSignalWeights.objects.get(organization=cast.org_a, project__isnull=True)
    assert (org_row.usage_alpha, org_row.usage_beta) == (6.0, 5.0)
    assert not ProjectSignalWeights.objects.filter(project=cast.project_a).exists()


def test_recompute_uses_the_org_wide_row_for_org_memories_and_the_project_row_for_project_memories(
    cast, make_token, token, memory
):
    _, admin = make_token(cast.org_a)
    org_memory = record(admin, scope="org", title="Org-wide convention for retries")
    memory_outcome(principal=token, memory=memory, succeeded=True)
    memory_outcome(principal=token, memory=org_memory, succeeded=True)
    ProjectSignalWeights.objects.filter(organization=cast.org_a, project__isnull=True).update(
        outcome_alpha=9, outcome_beta=1
    )
    ProjectSignalWeights.objects.filter(organization=cast.org_a, project=cast.project_a).update(
        outcome_alpha=1, outcome_beta=9
    )

    confidence_recompute_all()

    _, _, w_org, _ = weights(outcome=(9, 1))
    _, _, w_project, _ = weights(outcome=(1, 9))
    assert Memory.objects.get(pk=org_memory.pk).confidence == pytest.approx((1.6 + w_org) / (2.0 + w_org))
    assert Memory.objects.get(pk=memory.pk).confidence == pytest.approx((1.6 + w_project) / (2.0 + w_project))


def test_each_org_learns_in_its_own_org_wide_row(cast, make_token):
    _, admin_a = make_token(cast.org_a)
    _, admin_b = make_token(cast.org_b)
    memory_a = record(admin_a, scope="org")
    memory_b = record(admin_b, scope="org")
    memory_feedback(principal=admin_a, memory=memory_a, helpful=True)
    memory_feedback(principal=admin_b, memory=memory_b, helpful=False)
    row_a = ProjectSignalWeights.objects.get(organization=cast.org_a, project__isnull=True)
    row_b = ProjectSignalWeights.objects.get(organization=cast.org_b, project__isnull=True)
    assert (row_a.usage_alpha, row_a.usage_beta) == (5.0, 6.0)
    assert (row_b.usage_alpha, row_b.usage_beta) == (6.0, 5.0)
