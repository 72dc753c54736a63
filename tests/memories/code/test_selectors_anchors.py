"""Anchor reads (memories/code/selectors.py): a page's anchors in one query, memories anchored to a file then
its directory, or to an error, within the principal's reach and organization; a repository's project."""

from __future__ import annotations

from typing import Any

from memories.code.selectors import (
    MATCH_DIRECTORY,
    MATCH_ERROR,
    MATCH_FILE,
    anchor_dicts_by_memory,
    memories_anchored_to_error,
    memories_anchored_to_path,
    project_slug_resolve,
)
from memories.code.services import anchor_draft, memory_anchors_set
from memories.models import Memory
from tests.factories import MemoryFactory, ProjectFactory


def _anchored(principal: Any, anchors: list[dict[str, Any]], **fields: Any) -> Memory:
    memory = MemoryFactory(principal=principal, **fields)
    memory_anchors_set(principal=principal, memory=memory, anchors=anchors)
    return memory


def test_a_pages_anchors_are_read_in_one_query(cast: Any, django_assert_num_queries: Any) -> None:
    alice = cast.principal(cast.alice)
    anchors = [{"path": "m.py"}, {"error": "KeyError: 'x'"}]
    memories = [_anchored(alice, anchors, project="web-app", title=f"Lesson {i}") for i in range(5)]
    bare = MemoryFactory(principal=alice, project="web-app")
    with django_assert_num_queries(1):
        found = anchor_dicts_by_memory([*memories, bare])
    assert found[bare.id] == []
    assert [a["path"] for a in found[memories[2].id]] == ["", "m.py"]
    assert set(found[memories[0].id][1]) == {
        "repository", "path", "symbol", "line_start", "line_end", "commit", "error_signature", "error_text", "state",
        "changed_commit",
    }  # fmt: skip


def test_the_file_comes_first_then_its_directory_but_not_deeper(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    on_file = _anchored(alice, [{"path": "app/models.py"}], project="web-app")
    beside = _anchored(alice, [{"path": "app/views.py"}], project="web-app", confidence=0.9)
    on_dir = _anchored(alice, [{"path": "app"}], project="web-app", confidence=0.1)
    _anchored(alice, [{"path": "app/sub/deep.py"}], project="web-app")
    _anchored(alice, [{"path": "other/models.py"}], project="web-app")
    found = memories_anchored_to_path(alice, "./app/models.py")
    assert [(f.memory.id, f.match) for f in found] == [
        (on_file.id, MATCH_FILE), (beside.id, MATCH_DIRECTORY), (on_dir.id, MATCH_DIRECTORY)
    ]
    assert [f.memory.id for f in memories_anchored_to_path(alice, "app/models.py", directory=False)] == [on_file.id]
    assert len(memories_anchored_to_path(alice, "app/models.py", limit=1)) == 1


def test_a_repository_narrows_to_its_anchors_and_unnamed_ones(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    ours = _anchored(alice, [{"path": "a.py", "repository": "github.com/acme/web"}], project="web-app")
    unnamed = _anchored(alice, [{"path": "a.py"}], project="web-app")
    _anchored(alice, [{"path": "a.py", "repository": "github.com/acme/other"}], project="web-app")
    found = memories_anchored_to_path(alice, "a.py", repository="https://github.com/acme/web.git")
    assert {f.memory.id for f in found} == {ours.id, unnamed.id}


def test_reach_and_organization_bound_what_is_found(cast: Any, make_token: Any) -> None:
    alice = cast.principal(cast.alice)
    other = ProjectFactory(organization=cast.org_a, slug="other")
    theirs = _anchored(alice, [{"path": "a.py"}], project="other")
    ours = _anchored(alice, [{"path": "a.py"}], project="web-app")
    _anchored(cast.principal(cast.charlie), [{"path": "a.py"}], project="billing")
    _, restricted = make_token(cast.org_a, projects=[cast.project_a])
    assert [f.memory.id for f in memories_anchored_to_path(restricted, "a.py")] == [ours.id]
    assert {f.memory.id for f in memories_anchored_to_path(alice, "a.py")} == {ours.id, theirs.id}
    assert [f.memory.id for f in memories_anchored_to_path(alice, "a.py", project=other)] == [theirs.id]


def test_archived_memories_are_not_found_unless_asked(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    memory = _anchored(alice, [{"path": "a.py"}], project="web-app", state=Memory.STATE_ARCHIVED)
    assert memories_anchored_to_path(alice, "a.py") == []
    assert [f.memory.id for f in memories_anchored_to_path(alice, "a.py", states=["archived"])] == [memory.id]


def test_an_error_finds_the_memories_with_its_signature(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    output = 'File "/tmp/x/app.py", line 3, in load\nKeyError: \'user\''
    fixed = _anchored(alice, [{"error": output}], project="web-app")
    _anchored(alice, [{"error": "ValueError: bad"}], project="web-app")
    _anchored(cast.principal(cast.charlie), [{"error": output}], project="billing")
    elsewhere = output.replace("/tmp/x", "/home/bob/y").replace("line 3", "line 9")  # another run of it
    digest = anchor_draft({"error": elsewhere}).error_signature
    found = memories_anchored_to_error(alice, digest)
    assert [(f.memory.id, f.match) for f in found] == [(fixed.id, MATCH_ERROR)]


def test_two_spellings_of_a_remote_resolve_to_its_project(cast: Any, make_token: Any) -> None:
    cast.project_a.repository = "github.com/acme/web"
    cast.project_a.save()
    alice = cast.principal(cast.alice)
    assert project_slug_resolve(alice, None, "git@github.com:acme/web.git") == "web-app"
    assert project_slug_resolve(alice, None, "https://alice@github.com/acme/web") == "web-app"
    assert project_slug_resolve(alice, "named", "git@github.com:acme/web.git") == "named"
    assert project_slug_resolve(alice, None, "git@github.com:acme/unknown.git") is None
    assert project_slug_resolve(cast.principal(cast.charlie), None, "git@github.com:acme/web.git") is None
    other = ProjectFactory(organization=cast.org_a, slug="other")
    _, restricted = make_token(cast.org_a, projects=[other])
    assert project_slug_resolve(restricted, None, "git@github.com:acme/web.git") is None
