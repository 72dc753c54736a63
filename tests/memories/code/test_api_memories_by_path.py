"""REST: GET /api/v1/memories?path=…&symbol=… — the memories anchored to a file, a directory or a symbol
(docs/code-memory.md#browse-by-code), paginated like every list."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.models_code import MemoryAnchor
from tests.factories import memory_recorder

MEMORIES = "/api/v1/memories"
record = memory_recorder(description="When working on the HTTP client", content="Set a timeout on every call.")


def anchor(memory: Memory, path: str, **fields) -> MemoryAnchor:
    return MemoryAnchor.objects.create(organization=memory.organization, memory=memory, path=path, **fields)


@pytest.fixture
def bank(cast, agent):
    """Memories of org A anchored around src/http/: the client (two symbols), its tests, a sibling
    directory whose name starts alike, and one memory with no anchor."""
    made = {
        "send": record(agent, title="Client.send retries"),
        "parser": record(agent, title="Parser quirks"),
        "tests": record(agent, title="Client tests need a fake clock"),
        "sibling": record(agent, title="The old http package"),
        "free": record(agent, title="No anchor here"),
    }
    anchor(made["send"], "src/http/client.py", symbol="Client.send", line_start=10, line_end=30)
    anchor(made["send"], "src/http/client.py", symbol="Client.close")  # two anchors, one row listed
    anchor(made["parser"], "src/http/client.py", symbol="Parser.parse")
    anchor(made["parser"], "src/http/errors.py", symbol="ParserError")
    anchor(made["tests"], "tests/http/test_client.py", symbol="test_send")
    anchor(made["sibling"], "src/http_old/client.py", symbol="Client.send")
    return made


def listed(client, **params) -> list[str]:
    response = client.get(MEMORIES, params)
    assert response.status_code == 200, response.json()
    return sorted(m["id"] for m in response.json()["results"])


def test_a_path_lists_the_memories_anchored_to_that_exact_file(cast, bank, token_client):
    client = token_client(cast.org_a)
    assert listed(client, path="src/http/client.py") == sorted([bank["send"].id, bank["parser"].id])
    assert listed(client, path="./src//http/client.py") == listed(client, path="src/http/client.py")
    assert listed(client, path="src/http") == []  # a directory without its slash is a file's name


def test_a_trailing_slash_lists_everything_under_the_directory_and_nothing_beside_it(cast, bank, token_client):
    client = token_client(cast.org_a)
    assert listed(client, path="src/http/") == sorted([bank["send"].id, bank["parser"].id])
    assert bank["sibling"].id not in listed(client, path="src/http/")
    assert listed(client, path="src/") == sorted([bank["send"].id, bank["parser"].id, bank["sibling"].id])


def test_a_symbol_narrows_within_the_path_on_the_same_anchor(cast, bank, token_client):
    client = token_client(cast.org_a)
    assert listed(client, path="src/http/client.py", symbol="Client.send") == [bank["send"].id]
    # Parser's memory has ParserError too, but on another file: not within this path
    assert listed(client, path="src/http/client.py", symbol="ParserError") == []
    assert listed(client, path="src/", symbol="Client.send") == sorted([bank["send"].id, bank["sibling"].id])


def test_a_class_finds_its_members_but_not_a_longer_name(cast, bank, token_client):
    client = token_client(cast.org_a)
    assert listed(client, symbol="Parser") == [bank["parser"].id]  # Parser.parse, and not ParserError's
    assert listed(client, symbol="Client") == sorted([bank["send"].id, bank["sibling"].id])


def test_the_filtered_list_pages_like_every_list(cast, bank, token_client):
    client = token_client(cast.org_a)
    first = client.get(MEMORIES, {"path": "src/", "page_size": 2}).json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1
    ids = [m["id"] for m in first["results"] + second["results"]]
    assert sorted(ids) == sorted([bank["send"].id, bank["parser"].id, bank["sibling"].id])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"path": "../etc/passwd"}, "path"),
        ({"path": "/abs/app.py"}, "path"),
        ({"path": ""}, "path"),
        ({"symbol": ""}, "symbol"),
        ({"paths": "src/"}, "paths"),  # unknown, as every list answers one
    ],
)
def test_a_bad_or_unknown_parameter_is_a_400_naming_it(cast, bank, token_client, params, field):
    response = token_client(cast.org_a).get(MEMORIES, params)
    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()


@pytest.mark.cross_tenant("api-memories")
def test_another_organizations_memories_on_the_same_path_are_never_listed(cast, bank, token_client, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(charlie, title="Globex's client lesson")
    anchor(theirs, "src/http/client.py", symbol="Client.send")
    assert theirs.id not in listed(token_client(cast.org_a), path="src/http/client.py")
    assert theirs.id not in listed(token_client(cast.org_a), symbol="Client.send")
    assert listed(token_client(cast.org_b), path="src/http/client.py") == [theirs.id]


def test_a_symbol_the_schema_allows_but_no_symbol_is_a_422_naming_it(cast, bank, token_client):
    response = token_client(cast.org_a).get(MEMORIES, {"symbol": "Client send"})
    assert response.status_code == 422, response.json()
    assert response.json()["code"] == "rejected_symbol" and "symbol" in response.json()["errors"]
