"""``POST``/``GET /api/v1/code/history`` (docs/code-memory.md#seeding-from-history): a client's parsed commits
handed in (dry run, submit, re-submit), the progress, the contract's refusals, the scopes and the wall
between organizations."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent
from memories.code.history import history_chains, history_jsonl_read
from memories.models import AgentSession, HistorySeed, Memory, SeededCommit

URL = "/api/v1/code/history"
SLICE = Path(__file__).parent / "git_history" / "pallets-click-slice.jsonl.gz"
REMOTE = "git@github.com:pallets/click.git"
pytestmark = pytest.mark.django_db


def commits(count: int = 30) -> list[dict[str, Any]]:
    with gzip.open(SLICE, "rt") as handle:
        read = history_jsonl_read(handle)
    history_chains(read)
    return read[:count]


@pytest.fixture
def alice(cast: Any, token_client: Any) -> Any:
    return token_client(cast.org_a, projects=[cast.project_a])


def test_a_dry_run_answers_the_batches_and_the_estimate_and_stores_nothing(alice: Any) -> None:
    answer = alice.post(URL, {"repository": REMOTE, "commits": commits(), "batch_size": 7, "dry_run": True},
                        format="json")  # fmt: skip
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["dry_run"] and body["received"] == 30 and body["submitted"] == 0 and body["batches"] == []
    assert body["estimate"]["batches"] == 5 and body["estimate"]["provider"] == "none"
    assert body["estimate"]["tokens"] == body["estimate"]["input_tokens"] + body["estimate"]["output_tokens"] > 0
    assert not AgentSession.objects.exists() and not HistorySeed.objects.exists()


def test_commits_are_submitted_in_batches_once_and_the_progress_says_how_far_it_got(cast: Any, alice: Any) -> None:
    first = alice.post(URL, {"repository": REMOTE, "commits": commits(20), "batch_size": 10}, format="json")
    assert first.status_code == 201, first.json()
    body = first.json()
    assert body["repository"] == "github.com/pallets/click" and body["project"] == "web-app"
    assert [b["commits"] for b in body["batches"]] == [10, 10]
    assert {b["status"] for b in body["batches"]} == {"waiting_for_llm"} and body["waiting_for_llm"]
    assert body["episodic_memories"] == Memory.objects.filter(project=cast.project_a).count() > 0
    # the whole slice again: the twenty it has are skipped
    again = alice.post(URL, {"repository": "https://github.com/pallets/click", "commits": commits()}, format="json")
    assert again.status_code == 201 and again.json()["skipped"] == 20 and again.json()["submitted"] == 10
    assert SeededCommit.objects.count() == 30 and AgentSession.objects.count() == 3
    audits = AuditEvent.objects.filter(organization=cast.org_a, verb="history.seed").order_by("id")
    assert [a.data["commits"] for a in audits] == [20, 10]
    progress = alice.get(URL, {"repository": "github.com/pallets/click"})
    assert progress.status_code == 200, progress.json()
    state = progress.json()
    assert state["commits"] == 30 and state["batches"] == 3 and state["batches_by_status"] == {"waiting_for_llm": 3}
    assert state["last_commit"] == commits()[-1]["sha"] and state["batches_distilled"] == 0
    assert "3 wait for an LLM" in state["message"]


def test_bad_input_is_a_4xx_naming_the_field_and_nothing_is_written(alice: Any) -> None:
    unknown = alice.post(URL, {"repository": REMOTE, "commits": commits(1), "since": "x"}, format="json")
    assert unknown.status_code == 400 and "since" in str(unknown.json())
    bad_sha = alice.post(URL, {"repository": REMOTE, "commits": [{**commits(1)[0], "sha": "not-a-sha"}]}, format="json")
    assert bad_sha.status_code == 400 and "sha" in str(bad_sha.json())
    no_remote = alice.post(URL, {"repository": "/home/alice/click", "commits": commits(1)}, format="json")
    # the schema's shape, but not a remote: refused like content the service cannot read
    assert no_remote.status_code == 422 and no_remote.json()["code"] == "rejected_not_a_remote"
    assert "repository" in no_remote.json()["errors"]
    assert alice.get(URL, {"repository": "0"}).status_code == 404
    assert alice.get(URL, {"repository": ""}).status_code == 400
    empty = alice.post(URL, {"repository": REMOTE, "commits": []}, format="json")
    assert empty.status_code == 400
    never = alice.get(URL, {"repository": "github.com/acme/other"})
    assert never.status_code == 404
    assert not AgentSession.objects.exists() and not Memory.objects.exists()


def test_a_read_only_token_reads_the_progress_but_cannot_submit_commits(
    cast: Any, alice: Any, token_client: Any
) -> None:
    alice.post(URL, {"repository": REMOTE, "commits": commits(3)}, format="json")
    reader = token_client(cast.org_a, scopes=["memories:read"], projects=[cast.project_a])
    assert reader.post(URL, {"repository": REMOTE, "commits": commits(3)}, format="json").status_code == 403
    assert reader.get(URL, {"repository": REMOTE}).status_code == 200


@pytest.mark.cross_tenant("api-code-history")
def test_another_organizations_seeding_is_invisible_and_its_project_unreachable(
    cast: Any, alice: Any, token_client: Any
) -> None:
    alice.post(URL, {"repository": REMOTE, "commits": commits(5)}, format="json")
    charlie = token_client(cast.org_b)
    # org B names org A's project: a 404, nothing written in either organization
    answer = charlie.post(URL, {"repository": REMOTE, "project": "web-app", "commits": commits(5)}, format="json")
    assert answer.status_code == 404
    assert charlie.get(URL, {"repository": REMOTE, "project": "web-app"}).status_code == 404
    # in its own project the same repository is a new seeding: nothing of org A's is skipped or shown
    assert charlie.get(URL, {"repository": REMOTE}).status_code == 404
    own = charlie.post(URL, {"repository": REMOTE, "commits": commits(5)}, format="json")
    assert own.status_code == 201 and own.json()["skipped"] == 0 and own.json()["project"] == "billing"
    assert SeededCommit.objects.filter(organization=cast.org_a).count() == 5
    assert SeededCommit.objects.filter(organization=cast.org_b).count() == 5


def test_a_commit_listed_twice_is_submitted_once(alice: Any) -> None:
    one = commits(1)[0]
    answer = alice.post(URL, {"repository": REMOTE, "commits": [one, one], "batch_size": 1}, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["submitted"] == 1 and SeededCommit.objects.count() == 1 and AgentSession.objects.count() == 1
