"""What became of a session's code (memories/code_reports/services.py;
docs/session-context.md#code-stability): a kept or reverted report moves the confidence of exactly the
memories the ledger ties to the session, once, within the reporter's organization; commits are tied to
sessions first; the first verdict is final. Also the stability signal's place among the confidence
signals (docs/confidence.md#learned-weights): learned weights, the rollup, the usage write."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from memories.code_reports.services import session_code_report
from memories.confidence.services import memory_feedback, signals_rollup
from memories.models import (
    Memory,
    MemorySignal,
    MemorySignalAggregate,
    ProjectSignalWeights,
    SessionCommit,
    SessionMemoryUse,
)
from memories.search.contracts import SearchInput, memory_search_run
from memories.sessions.services_ledger import session_uses_record
from reasoningbank.db_threads import write_behind_wait
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, NotFound
from tests.factories import ProjectFactory, memory_recorder

COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"  # git's sha-1 of a file "a\n": any full sha will do
OTHER_COMMIT = "89e6c98d92887913cadf06b2adb97f26cde4849b"
W_STABILITY = 0.5 / 2.2  # the default weight: stability's 5:5 mean over explicit 0.7 + three 0.5s

record = memory_recorder(description="When a change touches HTTP clients", outcome="success")


def stability(memory: Memory) -> list[bool]:
    return list(MemorySignal.objects.filter(memory=memory, type="stability").values_list("positive", flat=True))


def confidence(memory: Memory) -> float:
    return Memory.objects.get(pk=memory.pk).confidence


TIED_COMMIT = "c0ffee" * 6 + "c0de"  # a commit of session s-1 (``tied``)


@pytest.fixture
def tied(agent, given):
    """Session s-1 with a commit tied to it (its post-commit hook ran): its code can be judged kept."""
    session_code_report(principal=agent, session_key="s-1", commit=TIED_COMMIT, status="committed")
    return given


@pytest.fixture
def given(agent):
    """Two memories given to session s-1; a third never given to it."""
    timeouts = record(agent, title="Set client timeouts", content="Always set connect and read timeouts.")
    retry = record(agent, title="Retry with jittered backoff", content="Retry idempotent calls with backoff.")
    unrelated = record(agent, title="Cache tax rates", content="Cache them for an hour at most.")
    session_uses_record(principal=agent, session_key="s-1", memory_ids=[timeouts.id, retry.id], via="search")
    return {"timeouts": timeouts, "retry": retry, "unrelated": unrelated}


# --- kept and reverted ----------------------------------------------------------------------------


def test_a_kept_report_gives_every_memory_the_session_was_given_a_positive_stability_signal(agent, given, tied):
    report = session_code_report(principal=agent, session_key="s-1", status="kept")

    assert sorted(report.reached) == sorted([given["timeouts"].id, given["retry"].id])
    assert sorted(report.signalled) == sorted(report.reached) and report.already_reported is False
    assert stability(given["timeouts"]) == [True] and stability(given["retry"]) == [True]
    assert stability(given["unrelated"]) == []
    assert confidence(given["timeouts"]) == pytest.approx((1.6 + W_STABILITY) / (2.0 + W_STABILITY))
    assert confidence(given["unrelated"]) == pytest.approx(0.8)
    assert set(SessionMemoryUse.objects.values_list("stability", flat=True)) == {"kept"}
    assert report.message == "Code kept for session 's-1': stability + on 2 memories given to the session"


def test_a_reverted_report_lowers_their_confidence_by_the_stability_weight(agent, given):
    session_code_report(principal=agent, session_key="s-1", status="reverted")

    assert stability(given["retry"]) == [False]
    assert confidence(given["retry"]) == pytest.approx(1.6 / (2.0 + W_STABILITY))
    signal = MemorySignal.objects.get(memory=given["retry"], type="stability")
    assert signal.session_id == "s-1" and signal.confidence_after == pytest.approx(confidence(given["retry"]))
    assert signal.actor == agent.actor_label


def test_repeating_a_report_changes_nothing_and_says_so(agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")
    before = confidence(given["timeouts"])

    again = session_code_report(principal=agent, session_key="s-1", status="kept")

    assert again.already_reported is True and again.reached == [] and again.signalled == []
    assert again.message == "Already reported kept for session 's-1': nothing changed"
    assert stability(given["timeouts"]) == [True] and confidence(given["timeouts"]) == before


def test_the_first_verdict_is_final_and_the_opposite_one_is_a_conflict_that_writes_nothing(agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")

    with pytest.raises(Conflict, match=r"session 's-1''s code was already reported kept on .*first verdict is final"):
        session_code_report(principal=agent, session_key="s-1", status="reverted")

    assert stability(given["timeouts"]) == [True] and stability(given["retry"]) == [True]
    assert set(SessionMemoryUse.objects.values_list("stability", flat=True)) == {"kept"}


def test_memories_given_after_a_verdict_receive_it_from_the_next_report_and_the_others_not_again(agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")
    session_uses_record(principal=agent, session_key="s-1", memory_ids=[given["unrelated"].id], via="context")

    later = session_code_report(principal=agent, session_key="s-1", status="kept")

    assert later.reached == [given["unrelated"].id] and later.already_reported is False
    assert stability(given["unrelated"]) == [True] and stability(given["timeouts"]) == [True]


def test_an_archived_memory_is_marked_with_the_verdict_but_its_confidence_is_left_alone(agent, given):
    Memory.objects.filter(pk=given["retry"].pk).update(state="archived", archived_reason="stale")

    report = session_code_report(principal=agent, session_key="s-1", status="reverted")

    assert sorted(report.reached) == sorted([given["timeouts"].id, given["retry"].id])
    assert report.signalled == [given["timeouts"].id]
    assert stability(given["retry"]) == [] and confidence(given["retry"]) == pytest.approx(0.8)
    assert SessionMemoryUse.objects.get(memory=given["retry"]).stability == "reverted"
    assert report.message.endswith("(1 archived, marked without a signal)")


def test_a_project_token_leaves_another_projects_memory_for_a_report_that_can_reach_it(
    cast, agent, make_token, given, tied
):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    _, mobile_agent = make_token(cast.org_a, projects=[mobile])
    theirs = record(mobile_agent, title="Mobile: cache images", content="Cache images on disk, not in memory.")
    session_uses_record(principal=mobile_agent, session_key="s-1", memory_ids=[theirs.id], via="search")

    report = session_code_report(principal=agent, session_key="s-1", status="kept")
    assert theirs.id not in report.reached and stability(theirs) == []
    assert SessionMemoryUse.objects.get(memory=theirs).stability == ""

    session_code_report(principal=mobile_agent, session_key="s-1", status="kept")
    assert stability(theirs) == [True] and stability(given["timeouts"]) == [True]


def test_a_report_writes_an_audit_event_naming_the_session_and_the_memories(agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")
    event = AuditEvent.objects.get(verb="session.code_report", data__status="kept")
    assert event.data["session_id"] == "s-1" and event.data["status"] == "kept" and event.data["signals"] == 2
    assert sorted(event.data["memories"]) == sorted([given["timeouts"].id, given["retry"].id])


# --- commits ---------------------------------------------------------------------------------------


def test_a_post_commit_report_ties_the_commit_to_the_session_and_writes_no_signal(cast, agent, given):
    report = session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")

    assert report.already_reported is False and report.reached == []
    assert report.message == f"Commit {COMMIT[:12]} tied to session 's-1'; report it kept or reverted later"
    tie = SessionCommit.objects.get()
    assert (tie.organization, tie.session_key, tie.commit, tie.status) == (cast.org_a, "s-1", COMMIT, "committed")
    assert not MemorySignal.objects.filter(type="stability").exists()
    again = session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")
    assert again.already_reported is True and SessionCommit.objects.count() == 1


def test_a_ci_report_of_the_commit_alone_reaches_the_memories_of_its_session(agent, given):
    session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")

    report = session_code_report(principal=agent, commit=COMMIT, status="kept")

    assert report.session_key == "s-1" and len(report.reached) == 2
    assert stability(given["timeouts"]) == [True] and stability(given["unrelated"]) == []
    tie = SessionCommit.objects.get()
    assert tie.status == "kept" and tie.verdict_at is not None
    assert MemorySignal.objects.filter(type="stability").first().comment == f"commit {COMMIT[:12]} kept"
    assert session_code_report(principal=agent, commit=COMMIT, status="kept").already_reported is True


def test_a_reverted_report_naming_a_new_commit_and_its_session_ties_and_judges_at_once(agent, given):
    """A revert may be reported the moment it is seen, by whoever saw it."""
    report = session_code_report(principal=agent, session_key="s-1", commit=COMMIT.upper(), status="reverted")
    assert report.commit == COMMIT and len(report.signalled) == 2
    assert SessionCommit.objects.get().status == "reverted"


@pytest.mark.parametrize("session_key", ["s-1", "s-404"])  # a session given memories, and an unknown one
def test_kept_for_a_commit_never_tied_is_a_conflict_that_ties_nothing_and_judges_nothing(agent, given, session_key):
    """kept says a commit stood 7 days: it must have been tied to its session when it was made, not at
    the verdict (one call could otherwise invent a commit and reward the memories a session was given)."""
    with pytest.raises(Conflict, match=f"commit {COMMIT[:12]} is not tied to a session yet") as error:
        session_code_report(principal=agent, session_key=session_key, commit=COMMIT, status="kept")

    assert error.value.field == "commit" and "status committed" in error.value.message
    assert not SessionCommit.objects.exists() and not MemorySignal.objects.filter(type="stability").exists()
    assert not SessionMemoryUse.objects.exclude(stability="").exists()


def test_kept_for_a_session_with_no_commit_tied_is_a_conflict_until_its_commit_is(agent, given):
    with pytest.raises(Conflict, match="session 's-1' has no commit tied to it") as error:
        session_code_report(principal=agent, session_key="s-1", status="kept")
    assert error.value.field == "session_id" and not MemorySignal.objects.filter(type="stability").exists()

    session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")
    assert len(session_code_report(principal=agent, session_key="s-1", status="kept").signalled) == 2


def test_a_second_commit_of_a_judged_session_records_its_verdict_without_signalling_again(agent, given):
    for sha in (COMMIT, OTHER_COMMIT):
        session_code_report(principal=agent, session_key="s-1", commit=sha, status="committed")
    session_code_report(principal=agent, commit=COMMIT, status="kept")

    second = session_code_report(principal=agent, commit=OTHER_COMMIT, status="kept")

    assert second.reached == [] and second.already_reported is False
    assert SessionCommit.objects.get(commit=OTHER_COMMIT).status == "kept"
    assert stability(given["timeouts"]) == [True]


def test_a_commit_judged_kept_cannot_later_be_reported_reverted(agent, given):
    session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")
    session_code_report(principal=agent, commit=COMMIT, status="kept")

    with pytest.raises(Conflict, match=f"commit {COMMIT[:12]} was already reported kept") as error:
        session_code_report(principal=agent, commit=COMMIT, status="reverted")

    assert error.value.field == "status"
    assert SessionCommit.objects.get().status == "kept" and stability(given["retry"]) == [True]


def test_a_reverted_commit_of_a_session_already_judged_kept_is_refused_whole(agent, given):
    for sha in (COMMIT, OTHER_COMMIT):
        session_code_report(principal=agent, session_key="s-1", commit=sha, status="committed")
    session_code_report(principal=agent, commit=COMMIT, status="kept")

    with pytest.raises(Conflict, match="session 's-1''s code was already reported kept"):
        session_code_report(principal=agent, commit=OTHER_COMMIT, status="reverted")

    assert SessionCommit.objects.get(commit=OTHER_COMMIT).status == "committed"  # nothing written


def test_a_commit_tied_to_one_session_cannot_be_claimed_by_another(agent, given):
    session_code_report(principal=agent, session_key="s-1", commit=COMMIT, status="committed")
    with pytest.raises(Conflict, match=r"tied to session 's-1', not 's-2'") as error:
        session_code_report(principal=agent, session_key="s-2", commit=COMMIT, status="committed")
    assert error.value.field == "commit"


def test_an_unknown_commit_is_not_found_and_named(agent, given):
    with pytest.raises(NotFound, match=f"commit {COMMIT} not found: no session is tied to it") as error:
        session_code_report(principal=agent, commit=COMMIT, status="kept")
    assert error.value.field == "commit"


def test_an_unknown_session_is_not_found_and_named(agent, given):
    with pytest.raises(NotFound, match="session 's-404' not found: no memory was given to it") as error:
        session_code_report(principal=agent, session_key="s-404", status="kept")
    assert error.value.field == "session_id"


def test_a_session_known_only_by_its_commit_takes_a_verdict_that_reaches_no_memory(agent):
    session_code_report(principal=agent, session_key="s-9", commit=COMMIT, status="committed")
    report = session_code_report(principal=agent, session_key="s-9", status="kept")
    assert report.reached == [] and report.already_reported is False
    assert report.message == "No memory given to session 's-9' is waiting for a verdict: nothing changed"
    judged = session_code_report(principal=agent, commit=COMMIT, status="kept")
    assert judged.message == (
        f"Recorded kept for commit {COMMIT[:12]} of session 's-9'; no memory given to the session was waiting "
        "for a verdict"
    )


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"status": "kept"}, "session_id"),
        ({"status": "committed", "session_id": "s-1"}, "commit"),
        ({"status": "committed", "commit": COMMIT}, "session_id"),
        ({"status": "kept", "commit": COMMIT[:12]}, "commit"),
        ({"status": "kept", "commit": "z" * 40}, "commit"),
        ({"status": "merged", "session_id": "s-1"}, "status"),
        ({"status": "kept", "session_id": "s" * 201}, "session_id"),
    ],
)
def test_bad_input_is_refused_naming_the_field(agent, given, arguments, field):
    session_key = arguments.pop("session_id", "")
    with pytest.raises(InvalidInput) as error:
        session_code_report(principal=agent, session_key=session_key, **arguments)
    assert error.value.field == field


def test_a_read_only_token_cannot_report(cast, make_token, given):
    _, reader = make_token(cast.org_a, scopes=["memories:read"])
    with pytest.raises(Forbidden, match="memories:write"):
        session_code_report(principal=reader, session_key="s-1", status="kept")
    assert stability(given["timeouts"]) == []


# --- tenancy ---------------------------------------------------------------------------------------


def test_another_orgs_session_and_commit_of_the_same_ids_never_reach_this_orgs_memories(cast, make_token, given):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    with pytest.raises(NotFound):  # org A's session s-1 does not exist for org B
        session_code_report(principal=charlie, session_key="s-1", status="reverted")
    theirs = record(charlie, title="Globex: retry webhooks", content="Their own rule for webhook retries.")
    session_uses_record(principal=charlie, session_key="s-1", memory_ids=[theirs.id], via="search")
    # the same commit sha in both orgs: two independent ties
    session_code_report(principal=charlie, session_key="s-1", commit=COMMIT, status="committed")
    report = session_code_report(principal=charlie, commit=COMMIT, status="reverted")

    assert report.reached == [theirs.id] and stability(theirs) == [False]
    assert stability(given["timeouts"]) == [] and stability(given["retry"]) == []
    assert set(SessionMemoryUse.objects.filter(organization=cast.org_a).values_list("stability", flat=True)) == {""}
    assert SessionCommit.objects.filter(organization=cast.org_a).count() == 0


# --- the fourth signal type among the others -----------------------------------------------------


def test_helpful_feedback_after_kept_code_teaches_the_project_that_stability_predicts_it(cast, agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")
    memory_feedback(principal=agent, memory=given["timeouts"], helpful=True)
    memory_feedback(principal=agent, memory=given["unrelated"], helpful=True)  # no stability signal: wrong
    row = ProjectSignalWeights.objects.get(organization=cast.org_a, project=cast.project_a)
    assert (row.stability_alpha, row.stability_beta) == (6.0, 6.0)


def test_the_rollup_folds_old_stability_signals_into_the_aggregate_and_keeps_confidence(agent, given, tied):
    session_code_report(principal=agent, session_key="s-1", status="kept")
    MemorySignal.objects.update(created_at=timezone.now() - timedelta(days=40))
    before = confidence(given["timeouts"])

    assert signals_rollup() == {"folded": 2, "memories": 2}

    agg = MemorySignalAggregate.objects.get(memory=given["timeouts"])
    assert (agg.stability_pos, agg.stability_neg) == (1, 0)
    assert confidence(given["timeouts"]) == pytest.approx(before)


def test_a_search_after_a_verdict_keeps_the_stability_signal_in_the_confidence_it_writes(agent, given):
    session_code_report(principal=agent, session_key="s-1", status="reverted")
    memory_search_run(agent, SearchInput(query="set client timeouts", limit=1, min_confidence=0))
    write_behind_wait()
    # prior (1.6, 0.4) + one reverted (beta) + one use (alpha), each weighing 0.5 / 2.2
    w = W_STABILITY
    assert confidence(given["timeouts"]) == pytest.approx((1.6 + w) / (2.0 + 2 * w))
