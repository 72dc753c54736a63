"""Anchors over REST (docs/code-memory.md#anchors): recorded with a memory, returned by record, get, list,
edit and search (the list's anchors in one query whatever the page's size), replaced by an edit, refused
with a 400 naming ``anchors``; another organization's memory is a 404 and keeps its anchors."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.code.signatures import error_signature
from memories.models import MemoryAnchor

pytestmark = pytest.mark.django_db

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/alice/web/app/db.py", line 40, in connect\n'
    "    raise TimeoutError(f'pool exhausted after {n} s')\n"
    "TimeoutError: pool exhausted after 30 s\n"
)
PLACE = {
    "repository": "git@github.com:acme/web.git", "path": "./app/db.py", "symbol": "Pool.connect",
    "line_start": 10, "line_end": 24, "commit": "3F786850E387",
}  # fmt: skip


def record(client: Any, anchors: list[dict[str, Any]], **overrides: Any) -> Any:
    body = {
        "title": "Close the pool in the test teardown",
        "description": "When a test leaks database connections",
        "content": "Close the pool in teardown, or the next test waits for a free connection.",
        "outcome": "success",
        "project": "web-app",
        "anchors": anchors,
        **overrides,
    }
    return client.post("/api/v1/memories", body, format="json")


@pytest.fixture
def alice(cast: Any, token_client: Any) -> Any:
    return token_client(cast.org_a)


def test_a_recorded_memory_returns_its_anchors_normalised(alice: Any) -> None:
    response = record(alice, [PLACE, {"error": TRACEBACK}])
    assert response.status_code == 201, response.json()
    anchors = response.json()["memory"]["anchors"]
    signature = error_signature(TRACEBACK)
    assert signature is not None
    assert anchors == [
        {"repository": "", "path": "", "symbol": "", "line_start": None, "line_end": None, "commit": "",
         "error_signature": signature.digest, "error_text": signature.text, "state": "current", "changed_commit": ""},
        {"repository": "github.com/acme/web", "path": "app/db.py", "symbol": "Pool.connect", "line_start": 10,
         "line_end": 24, "commit": "3f786850e387", "error_signature": "", "error_text": "", "state": "current",
         "changed_commit": ""},
    ]  # fmt: skip
    got = alice.get(f"/api/v1/memories/{response.json()['id']}").json()
    assert got["anchors"] == anchors


@pytest.mark.parametrize(
    ("anchor", "status", "said"),
    [
        # the wrong shape: a 400
        ({"path": "app.py", "file": "b.py"}, 400, "file"),
        ({"path": "a.py", "line_start": "9"}, 400, "line_start"),
        ({"path": "a.py", "line_start": 0}, 400, "line_start"),
        # the right shape, but no anchor: a 422 (rejected_anchor), as the schema cannot say it
        ({"path": "/etc/passwd"}, 422, "relative to the repository"),
        ({"path": "a.py", "line_start": 9, "line_end": 3}, 422, "line_end must not be before line_start"),
        ({"error": "it broke somehow"}, 422, "holds no error line"),
        ({"symbol": "Pool.connect"}, 422, "need the path"),
        ({"path": "a.py", "repository": "/home/alice/web"}, 422, "not a git remote"),
        ({}, 422, "needs a path or an error"),
    ],
)
def test_a_bad_anchor_is_refused_naming_anchors_and_records_nothing(
    alice: Any, anchor: Any, status: int, said: str
) -> None:
    response = record(alice, [anchor])
    assert response.status_code == status, response.json()
    if status == 422:
        assert response.json()["code"] == "rejected_anchor"
    assert list(response.json()["errors"]) == ["anchors"]
    assert said in response.json()["errors"]["anchors"][0]
    assert not MemoryAnchor.objects.exists()
    assert alice.get("/api/v1/memories").json()["count"] == 0


def test_more_anchors_than_the_cap_are_refused(alice: Any) -> None:
    response = record(alice, [{"path": f"f{i}.py"} for i in range(21)])
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["anchors"]


def test_the_list_reads_anchors_in_one_query_whatever_the_pages_size(alice: Any) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            body = alice.get("/api/v1/memories").json()
        assert all(memory["anchors"] for memory in body["results"])
        return len(captured)

    record(alice, [PLACE], title="Lesson zero about pools")
    record(alice, [PLACE, {"path": "app/other.py"}], title="Lesson one about pools")
    few = queries()
    for n in range(2, 7):
        record(alice, [{"path": f"app/m{n}.py"}], title=f"Lesson {n} about pools")
    assert queries() == few


def test_an_edit_replaces_the_anchors_and_an_empty_list_removes_them(alice: Any) -> None:
    memory_id = record(alice, [PLACE]).json()["id"]
    edited = alice.patch(f"/api/v1/memories/{memory_id}", {"anchors": [{"path": "app/pool.py"}]}, format="json")
    assert edited.status_code == 200, edited.json()
    assert [a["path"] for a in edited.json()["anchors"]] == ["app/pool.py"]
    refused = alice.patch(f"/api/v1/memories/{memory_id}", {"anchors": [{"path": "x.py", "lines": 3}]}, format="json")
    assert refused.status_code == 400 and "anchors" in refused.json()["errors"]
    outside = alice.patch(f"/api/v1/memories/{memory_id}", {"anchors": [{"path": "../x.py"}]}, format="json")
    assert outside.status_code == 422 and outside.json()["code"] == "rejected_anchor"
    assert [a["path"] for a in alice.get(f"/api/v1/memories/{memory_id}").json()["anchors"]] == ["app/pool.py"]
    assert alice.patch(f"/api/v1/memories/{memory_id}", {"anchors": []}, format="json").json()["anchors"] == []
    assert not MemoryAnchor.objects.exists()


def test_an_edit_without_anchors_keeps_them(alice: Any) -> None:
    memory_id = record(alice, [PLACE]).json()["id"]
    edited = alice.patch(f"/api/v1/memories/{memory_id}", {"tags": ["db"]}, format="json").json()
    assert [a["path"] for a in edited["anchors"]] == ["app/db.py"]


def test_search_hits_carry_their_anchors_and_leave_them_out_when_none(alice: Any) -> None:
    record(alice, [PLACE])
    record(alice, [], title="Close files in teardown", content="Close every file a test opens, in its teardown.")
    body = alice.post("/api/v1/memories/search", {"query": "teardown", "min_confidence": 0}, format="json").json()
    by_title = {hit["title"]: hit for hit in body["memories"]}
    assert [a["path"] for a in by_title["Close the pool in the test teardown"]["anchors"]] == ["app/db.py"]
    assert "anchors" not in by_title["Close files in teardown"]


@pytest.mark.cross_tenant("api-memory", "api-memories")
def test_another_orgs_memory_and_its_anchors_stay_out_of_reach(cast: Any, alice: Any, token_client: Any) -> None:
    theirs = record(token_client(cast.org_b), [PLACE], project="billing").json()["id"]
    assert alice.patch(f"/api/v1/memories/{theirs}", {"anchors": []}, format="json").status_code == 404
    assert alice.get(f"/api/v1/memories/{theirs}").status_code == 404
    assert alice.get("/api/v1/memories").json()["count"] == 0
    assert MemoryAnchor.objects.filter(memory_id=theirs).count() == 1
