"""REST finds a session by the ``session_id`` its client chose
(docs/memory-model.md#sessions-and-distillation), as well as by the service's ``ses_…`` id, only within
the token's reach."""

from __future__ import annotations

import pytest

from memories.sessions import services as services_sessions
from memories.sessions.services import session_process
from tests.factories import ProjectFactory
from tests.fakes import ScriptedLLM

SESSIONS = "/api/v1/sessions"


@pytest.fixture(autouse=True)
def llm_configured(settings, monkeypatch):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


def submit(client, session_id: str = "run-42", **body):
    payload = {"session_id": session_id, "outcome": "success", "trace": "agent: fixed the flaky test"} | body
    response = client.post(SESSIONS, payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_session_is_found_by_the_session_id_the_client_chose(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    submitted = submit(client)

    by_client_id = client.get(f"{SESSIONS}/run-42")
    by_service_id = client.get(f"{SESSIONS}/{submitted['id']}")

    assert by_client_id.status_code == 200, by_client_id.json()
    assert by_client_id.json()["id"] == submitted["id"] == by_service_id.json()["id"]
    assert by_client_id.json()["session_id"] == "run-42"


def test_a_failed_session_is_retried_by_the_client_session_id(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    submitted = submit(client)
    session_process(submitted["id"], llm=ScriptedLLM(["garbage", "more garbage"]))

    response = client.post(f"{SESSIONS}/run-42/retry")

    assert response.status_code == 200, response.json()
    assert (response.json()["id"], response.json()["status"]) == (submitted["id"], "queued")


def test_a_client_session_id_with_a_slash_is_found(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    submitted = submit(client, "2025/06/run-7")

    assert client.get(f"{SESSIONS}/2025/06/run-7").json()["id"] == submitted["id"]
    assert client.post(f"{SESSIONS}/2025/06/run-7/retry").status_code == 409  # queued: nothing to retry


def test_the_same_client_id_in_two_reachable_projects_asks_for_the_service_id(cast, token_client):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    client = token_client(cast.org_a)
    first = submit(client, project="web-app")
    second = submit(client, project="mobile")

    response = client.get(f"{SESSIONS}/run-42")

    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["session_id"]
    assert first["id"] in response.json()["detail"] and second["id"] in response.json()["detail"]
    assert client.get(f"{SESSIONS}/{second['id']}").json()["project"] == "mobile"


def test_a_project_restricted_token_finds_its_own_projects_session_by_client_id(cast, token_client):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    submit(token_client(cast.org_a), project="web-app")
    mine = submit(token_client(cast.org_a, projects=[mobile]))

    response = token_client(cast.org_a, projects=[mobile]).get(f"{SESSIONS}/run-42")

    assert response.status_code == 200 and response.json()["id"] == mine["id"]


@pytest.mark.cross_tenant("api-session", "api-session-retry")
def test_another_orgs_session_is_a_404_by_either_id(cast, token_client):
    submitted = submit(token_client(cast.org_a, projects=[cast.project_a]))
    globex = token_client(cast.org_b)

    for session_id in ("run-42", submitted["id"]):
        assert globex.get(f"{SESSIONS}/{session_id}").status_code == 404
        assert globex.post(f"{SESSIONS}/{session_id}/retry").status_code == 404
    restricted = token_client(cast.org_a, projects=[ProjectFactory(organization=cast.org_a, slug="other")])
    assert restricted.get(f"{SESSIONS}/run-42").status_code == 404


def test_submitting_with_an_unknown_field_is_a_400_naming_it(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    payload = {"session_id": "s", "outcome": "success", "trace": "t", "transcript": "oops"}

    response = client.post(SESSIONS, payload, format="json")

    assert response.status_code == 400 and list(response.json()["errors"]) == ["transcript"]


def test_a_trace_with_nul_characters_is_accepted_without_them_as_the_schema_allows(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])

    submitted = submit(client, "nul-trace", trace="agent: ran\x00 the tests")
    blank = client.post(SESSIONS, {"session_id": "blank", "outcome": "success", "trace": " \n "}, format="json")

    assert "\x00" not in client.get(f"{SESSIONS}/{submitted['id']}").json()["trace"]
    assert blank.status_code == 400 and list(blank.json()["errors"]) == ["trace"]


def test_a_session_id_with_a_line_break_is_looked_up_and_an_unknown_one_is_a_json_404(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    submitted = submit(client, "line\nbreak")

    found = client.get(f"{SESSIONS}/line%0Abreak")
    missing = client.get(f"{SESSIONS}/nope%0A")

    assert found.status_code == 200 and found.json()["id"] == submitted["id"]
    assert missing.status_code == 404 and missing.json()["errors"] == {"session_id": ["session 'nope\\n' not found"]}
