"""Anchor writes (memories/code/services.py): checked and normalised, refused with the field named, at most
ANCHORS_MAX per memory, replaced as a whole, and only by a token that may write the memory."""

from __future__ import annotations

from typing import Any

import pytest

from memories.code.services import ANCHORS_MAX, anchor_draft, anchor_draft_or_none, anchors_clean, memory_anchors_set
from memories.code.signatures import error_signature
from memories.models import MemoryAnchor
from reasoningbank.errors import Forbidden, InvalidInput
from tests.factories import MemoryFactory

TRACEBACK = """Traceback (most recent call last):
  File "/home/alice/api/app/views.py", line 12, in load
    return get(user)
  File "/home/alice/api/app/models.py", line 40, in get
    return rows[key]
KeyError: 'user'
"""


def test_an_anchor_is_normalised_remote_path_and_commit() -> None:
    draft = anchor_draft(
        {"repository": "git@github.com:acme/api.git", "path": "./src//app/models.py", "symbol": "User.save",
         "line_start": 3, "line_end": 9, "commit": "ABCDEF12"}
    )  # fmt: skip
    assert (draft.repository, draft.path, draft.symbol) == ("github.com/acme/api", "src/app/models.py", "User.save")
    assert (draft.line_start, draft.line_end, draft.commit) == (3, 9, "abcdef12")


def test_the_normalised_remote_is_accepted_as_it_is_returned() -> None:
    assert anchor_draft({"repository": "github.com/acme/api", "path": "a.py"}).repository == "github.com/acme/api"


def test_an_error_keeps_its_signature_and_readable_form_not_the_output() -> None:
    draft = anchor_draft({"error": TRACEBACK})
    signature = error_signature(TRACEBACK)
    assert signature is not None
    assert draft.error_signature == signature.digest
    assert draft.error_text == signature.text
    assert "/home/alice" not in draft.error_text


def test_an_error_line_alone_is_enough() -> None:
    assert anchor_draft({"error": "KeyError: 'user'"}).error_text.startswith("KeyError")


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({}, "anchors[0]"),
        ({"symbol": "f"}, "anchors[0]: a symbol or lines need the path"),
        ({"path": "/etc/passwd"}, "anchors[0].path"),
        ({"path": "../x.py"}, "anchors[0].path"),
        ({"path": "a.py", "line_end": 3}, "anchors[0].line_end"),
        ({"path": "a.py", "line_start": 9, "line_end": 3}, "anchors[0].line_end"),
        ({"path": "a.py", "line_start": 0}, "anchors[0].line_start"),
        ({"path": "a.py", "line_start": True}, "anchors[0].line_start"),
        ({"path": "a.py", "commit": "not-a-sha"}, "anchors[0].commit"),
        ({"path": "a.py", "repository": "/home/alice/api"}, "anchors[0].repository"),
        ({"path": "a.py", "symbol": "two words"}, "anchors[0].symbol"),
        ({"error": "it broke"}, "anchors[0].error"),
        ({"path": "a.py", "file": "b.py"}, "'file'"),
        ({"path": 3}, "anchors[0].path"),
        ("a.py", "anchors[0]"),
    ],
)
def test_a_bad_anchor_is_refused_naming_its_item_and_key(raw: Any, said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        anchor_draft(raw)
    assert caught.value.field == "anchors"  # the argument, as REST and MCP name errors
    assert said in str(caught.value)


def test_untrusted_anchors_are_dropped_not_raised() -> None:
    assert anchor_draft_or_none({"path": "/etc/passwd"}) is None
    assert anchor_draft_or_none({"path": "a.py"}) is not None


def test_a_list_names_the_bad_item_folds_duplicates_and_is_capped() -> None:
    with pytest.raises(InvalidInput) as caught:
        anchors_clean([{"path": "a.py"}, {"path": "b.py", "line_start": -1}])
    assert caught.value.field == "anchors"
    assert str(caught.value).startswith("anchors[1].line_start")
    assert len(anchors_clean([{"path": "a.py"}, {"path": "./a.py"}])) == 1
    with pytest.raises(InvalidInput, match=f"at most {ANCHORS_MAX}"):
        anchors_clean([{"path": f"f{i}.py"} for i in range(ANCHORS_MAX + 1)])


def test_an_anchor_without_repository_takes_the_projects(cast: Any) -> None:
    cast.project_a.repository = "github.com/acme/web"
    cast.project_a.save()
    alice = cast.principal(cast.alice)
    memory = MemoryFactory(principal=alice, project="web-app")
    (anchor,) = memory_anchors_set(principal=alice, memory=memory, anchors=[{"path": "app.py"}])
    assert anchor.repository == "github.com/acme/web"
    assert anchor.organization_id == cast.org_a.id


def test_setting_anchors_replaces_them(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    memory = MemoryFactory(principal=alice, project="web-app")
    memory_anchors_set(principal=alice, memory=memory, anchors=[{"path": "a.py"}, {"path": "b.py"}])
    memory_anchors_set(principal=alice, memory=memory, anchors=[{"path": "c.py"}])
    assert list(MemoryAnchor.objects.filter(memory=memory).values_list("path", flat=True)) == ["c.py"]
    memory_anchors_set(principal=alice, memory=memory, anchors=[])
    assert not MemoryAnchor.objects.filter(memory=memory).exists()


def test_a_refused_list_leaves_the_anchors_as_they_were(cast: Any) -> None:
    alice = cast.principal(cast.alice)
    memory = MemoryFactory(principal=alice, project="web-app")
    memory_anchors_set(principal=alice, memory=memory, anchors=[{"path": "a.py"}])
    with pytest.raises(InvalidInput):
        memory_anchors_set(principal=alice, memory=memory, anchors=[{"path": "b.py"}, {"path": "/abs"}])
    assert list(MemoryAnchor.objects.filter(memory=memory).values_list("path", flat=True)) == ["a.py"]


def test_a_viewer_or_another_org_may_not_set_anchors(cast: Any) -> None:
    memory = MemoryFactory(principal=cast.principal(cast.alice), project="web-app")
    with pytest.raises(Forbidden):
        memory_anchors_set(principal=cast.principal(cast.bob), memory=memory, anchors=[{"path": "a.py"}])
    with pytest.raises(Forbidden):
        memory_anchors_set(principal=cast.principal(cast.charlie), memory=memory, anchors=[{"path": "a.py"}])
    assert not MemoryAnchor.objects.filter(memory=memory).exists()
