"""Dashboard: the Code page (docs/code-memory.md#browse-by-code) — the anchored paths as a tree counted in
SQL, a directory's children on demand, a file's memories, the empty state, who may see it."""

from __future__ import annotations

import pytest

from memories.code.selectors_browse import code_tree
from memories.models import Memory
from memories.models_code import MemoryAnchor
from memories.moderation.services import memory_archive
from tests.factories import memory_recorder

HX = {"HTTP_HX_REQUEST": "true"}
record = memory_recorder(description="When changing the HTTP client", content="Set a timeout on every call.")


def anchor(memory: Memory, path: str, **fields) -> MemoryAnchor:
    return MemoryAnchor.objects.create(organization=memory.organization, memory=memory, path=path, **fields)


@pytest.fixture
def bank(agent):
    """src/http/client.py (two memories, one stale anchor), src/http/errors.py, src/cli.py, README.md,
    and an archived memory on src/old.py that the page never counts."""
    send = record(agent, title="Client.send retries on 503")
    close = record(agent, title="Close the pool before fork")
    errors = record(agent, title="ParserError keeps the offset")
    cli = record(agent, title="The CLI reads NO_COLOR")
    readme = record(agent, title="README examples are tested")
    gone = record(agent, title="The old module")
    anchor(send, "src/http/client.py", symbol="Client.send", line_start=40, line_end=72, commit="a" * 40)
    anchor(send, "src/http/client.py", symbol="Client.retry", state=MemoryAnchor.STATE_CODE_CHANGED,
           changed_commit="b" * 40)  # fmt: skip
    anchor(close, "src/http/client.py", symbol="Pool.close")
    anchor(errors, "src/http/errors.py", state=MemoryAnchor.STATE_DELETED)
    anchor(cli, "src/cli.py")
    anchor(readme, "README.md")
    anchor(gone, "src/old.py")
    memory_archive(principal=agent, memory=gone)
    MemoryAnchor.objects.create(  # an error signature has no path: not in the tree
        organization=cli.organization, memory=cli, error_signature="c" * 64, error_text="KeyError: 'x'"
    )
    return {"send": send, "close": close, "errors": errors, "cli": cli, "readme": readme, "gone": gone}


def entries(tree) -> dict[str, tuple[bool, int, int]]:
    return {e.path: (e.is_directory, e.memories, e.stale) for e in tree.entries}


def test_the_tree_counts_distinct_memories_and_stale_anchors_per_child_directories_first(cast, bank, agent):
    top = code_tree(agent)
    assert [e.path for e in top.entries] == ["src/", "README.md"]
    assert entries(top) == {"src/": (True, 4, 2), "README.md": (False, 1, 0)}
    assert entries(code_tree(agent, directory="src/")) == {
        "src/http/": (True, 3, 2),
        "src/cli.py": (False, 1, 0),
    }
    assert entries(code_tree(agent, directory="src/http/")) == {
        "src/http/client.py": (False, 2, 1),
        "src/http/errors.py": (False, 1, 1),
    }


def test_the_tree_is_one_query_however_many_files_a_directory_holds(cast, agent, django_assert_num_queries):
    memory = record(agent, title="One lesson on many files")
    for n in range(3):
        anchor(memory, f"pkg/small/f{n}.py")
    for n in range(60):
        anchor(memory, f"pkg/large/f{n:02}.py")
    with django_assert_num_queries(2) as small:  # the reach, then the grouped rows
        assert len(code_tree(agent, directory="pkg/small/").entries) == 3
    with django_assert_num_queries(len(small.captured_queries)):
        assert len(code_tree(agent, directory="pkg/large/").entries) == 60
    grouped = small.captured_queries[-1]["sql"]
    assert "GROUP BY" in grouped and "split_part" in grouped


def test_a_large_directory_comes_a_page_at_a_time(cast, agent):
    memory = record(agent, title="One lesson on many files")
    for n in range(7):
        anchor(memory, f"pkg/f{n}.py")
    first = code_tree(agent, directory="pkg/", limit=5)
    rest = code_tree(agent, directory="pkg/", offset=5, limit=5)
    assert first.has_more and not rest.has_more
    assert [e.name for e in first.entries + rest.entries] == [f"f{n}.py" for n in range(7)]


@pytest.mark.parametrize("who", ["alice", "bob"])  # the owner and a viewer
def test_a_member_sees_the_top_of_the_tree_with_counts_and_stale_badges(client, cast, bank, who):
    client.force_login(getattr(cast, who))
    response = client.get("/code/")
    html = response.content.decode()
    assert response.status_code == 200 and 'aria-current="page">Code' in html
    assert "src/</span>" in html and "README.md" in html and "2 stale" in html
    totals = html[html.index("code-totals") :][:300]
    assert "4 files · 5 memories anchored" in totals and "2 stale" in totals
    assert "src/http/" not in html  # under src/: fetched when it is opened
    assert "old.py" not in html


def test_opening_a_directory_fetches_its_children_only(client, cast, bank):
    client.force_login(cast.bob)
    html = client.get("/code/", {"dir": "src/http/"}, **HX).content.decode()
    assert "<html" not in html and '<ul class="code-tree">' in html
    assert "client.py" in html and "errors.py" in html and "cli.py" not in html


def test_a_file_lists_its_memories_with_symbol_lines_commit_and_state(client, cast, bank):
    client.force_login(cast.bob)
    html = client.get("/code/", {"path": "src/http/client.py"}, **HX).content.decode()
    assert "<html" not in html and 'id="code-file"' in html
    assert bank["send"].title in html and bank["close"].title in html and bank["cli"].title not in html
    assert "Client.send" in html and "40–72" in html and "a" * 10 in html
    assert "Code changed" in html and "b" * 10 in html  # the stale anchor and the commit that changed it
    full = client.get("/code/", {"path": "src/http/client.py", "dir": "src/http/"}).content.decode()
    assert "<html" in full and bank["send"].title in full and "errors.py" in full  # without htmx: the whole page


def test_an_empty_bank_says_how_anchors_are_made(client, cast):
    client.force_login(cast.alice)
    html = client.get("/code/").content.decode()
    assert "No memory is anchored to the code yet" in html
    for how in ("anchors", "distillation", "git history", "docs/code-memory.md"):
        assert how in html


@pytest.mark.parametrize(
    "params", [{"path": "../etc/passwd"}, {"dir": "/abs/"}, {"path": "src/"}, {"project": "nope"}, {"tree_page": "0"}]
)
def test_a_bad_parameter_is_a_400_with_the_reason_on_the_page(client, cast, bank, params):
    client.force_login(cast.alice)
    response = client.get("/code/", params)
    assert response.status_code == 400
    assert "This page cannot be shown" in response.content.decode()


def test_a_signed_out_visitor_is_sent_to_sign_in(client, bank):
    response = client.get("/code/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.cross_tenant("code-browse")
def test_another_organizations_paths_and_memories_never_show(client, cast, bank, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(charlie, title="Globex's secret lesson")
    anchor(theirs, "src/http/client.py", symbol="Globex.only")
    anchor(theirs, "globex_only/app.py")
    client.force_login(cast.alice)
    top = client.get("/code/").content.decode()
    assert "globex_only" not in top and "4 files" in top
    file = client.get("/code/", {"path": "src/http/client.py"}, **HX).content.decode()
    assert theirs.title not in file and "Globex.only" not in file
    assert "globex_only" not in client.get("/code/", {"dir": "globex_only/"}, **HX).content.decode()
    assert client.get("/code/", {"project": cast.project_b.slug}).status_code == 400  # not a project of acme
    client.force_login(cast.charlie)
    assert "globex_only" in client.get("/code/").content.decode()
    assert bank["send"].title not in client.get("/code/", {"path": "src/http/client.py"}, **HX).content.decode()
