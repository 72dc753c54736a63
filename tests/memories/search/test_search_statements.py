"""What one search costs the database (bench/README.md, where the CPU of one search goes): its statements
counted, and each read that every search makes written out once — the changed-code flags read once with the
ranking, the hits' sources and anchors in one statement each, none of them built by the ORM."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import MemoryAnchor
from tests.memories.search.test_api_search import SEARCH, record

# a REST search (limit 2 or more) of a token restricted to one project, without a session, once the project's
# learned signal weights exist: the token; the query's term statistics; both legs (one UNION in a test's
# transaction, two statements at once in a server); the neighbour walk; the changed-code flags; the folding
# of near-identical hits; the usage signal's read and its write (five statements: savepoint, synchronous
# commit off, the rows' locks, the write, release; behind the answer in a server, inline in a test); the
# summaries; the hits' sources; their anchors
STATEMENTS_PER_SEARCH = 15


def _searched(client: Any, **args: Any) -> tuple[dict[str, Any], list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.post(SEARCH, {"query": "retry the flaky upload with backoff", **args}, format="json")
    assert response.status_code == 200, response.json()
    return response.json(), [q["sql"] for q in captured.captured_queries]


def test_a_search_runs_a_fixed_number_of_statements_whatever_its_hits(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    for n in range(6):
        record(client, f"Retry flaky upload {n}", f"Retry the flaky upload with exponential backoff, variant {n}.")
    _searched(client)  # the project's first search writes its learned signal weights, once

    few, few_sql = _searched(client, limit=2)
    many, many_sql = _searched(client, limit=5)

    assert len(few["memories"]) == 2 and len(many["memories"]) == 5
    assert len(few_sql) == len(many_sql) == STATEMENTS_PER_SEARCH, "\n\n".join(many_sql)


def test_the_changed_code_flag_is_read_once_with_the_ranking_and_still_reaches_the_answer(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    memory_id = record(client, "Retry flaky upload", "Retry the flaky upload with exponential backoff.")
    MemoryAnchor.objects.create(
        organization=cast.org_a, memory_id=memory_id, repository="github.com/acme/web", path="upload.py",
        symbol="upload", commit="a" * 40, state=MemoryAnchor.STATE_CODE_CHANGED, changed_commit="b" * 40,
    )  # fmt: skip

    answer, statements = _searched(client)

    (hit,) = answer["memories"]
    assert hit["code_changed"]["commit"] == "b" * 40
    assert [a["path"] for a in hit["anchors"]] == ["upload.py"]
    flags = [sql for sql in statements if "memories_memoryanchor" in sql and "'code_changed'" in sql]
    assert len(flags) == 1, "\n\n".join(flags)
