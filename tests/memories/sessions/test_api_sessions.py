import pytest

from memories.sessions import services as services_sessions
from memories.sessions.services import session_process
from tests.factories import ProjectFactory
from tests.fakes import ScriptedLLM, memory_block


@pytest.fixture(autouse=True)
def llm_configured(settings, monkeypatch):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


def _post(client, **body):
    payload = {"session_id": "run-42", "outcome": "success", "trace": "agent: fixed the flaky test"} | body
    return client.post("/api/v1/sessions", payload, format="json")


def test_submitting_a_session_returns_201_then_200_for_the_same_id(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    first = _post(client)
    assert first.status_code == 201
    assert first.json()["status"] == "queued" and first.json()["session_id"] == "run-42"
    again = _post(client, outcome="failure")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


def test_a_distilled_session_lists_the_memories_it_produced(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    session_id = _post(client).json()["id"]
    session_process(
        session_id, llm=ScriptedLLM([memory_block(1, "Pin flaky seeds", "When tests flake", "Seed the RNG in setUp.")])
    )
    body = client.get(f"/api/v1/sessions/{session_id}").json()
    assert body["status"] == "done"
    assert [m["title"] for m in body["memories"]] == ["Pin flaky seeds"]
    listed = client.get("/api/v1/sessions?status=done").json()
    assert [s["id"] for s in listed["results"]] == [session_id]


def test_bad_submissions_get_a_400_naming_the_field(cast, token_client, settings):
    client = token_client(cast.org_a, projects=[cast.project_a])
    assert _post(client, outcome="great").json()["errors"].keys() == {"outcome"}
    settings.SESSION_TRACE_MAX_BYTES = 1024
    response = _post(client, trace="x" * 5000)
    assert response.status_code == 400 and "limit" in response.json()["detail"]
    assert client.get("/api/v1/sessions?status=bogus").status_code == 400


def test_a_multi_project_token_must_name_the_project(cast, token_client):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    response = _post(token_client(cast.org_a))
    assert response.status_code == 400 and "project" in response.json()["errors"]
    assert _post(token_client(cast.org_a), project="web-app").status_code == 201


@pytest.mark.cross_tenant("api-sessions", "api-session", "api-session-retry")
def test_another_orgs_session_is_a_404(cast, token_client):
    session_id = _post(token_client(cast.org_a, projects=[cast.project_a])).json()["id"]
    other = token_client(cast.org_b)
    assert other.get(f"/api/v1/sessions/{session_id}").status_code == 404
    assert other.post(f"/api/v1/sessions/{session_id}/retry").status_code == 404
    assert other.get("/api/v1/sessions").json()["results"] == []


def test_a_read_only_token_cannot_submit_or_retry(cast, token_client):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert _post(reader, project="web-app").status_code == 403


def test_a_failed_session_can_be_retried(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    session_id = _post(client).json()["id"]
    session_process(session_id, llm=ScriptedLLM(["garbage", "more garbage"]))
    assert client.get(f"/api/v1/sessions/{session_id}").json()["raw_reply"] == "more garbage"
    response = client.post(f"/api/v1/sessions/{session_id}/retry")
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert client.post(f"/api/v1/sessions/{session_id}/retry").status_code == 409


def test_a_nul_byte_in_the_submitted_session_id_is_a_400_naming_it_over_rest(cast, token_client):
    response = _post(token_client(cast.org_a, projects=[cast.project_a]), session_id="ab\x00c")
    assert response.status_code == 400
    assert response.json()["errors"].keys() == {"session_id"}  # DRF's own check; MCP goes to the service


@pytest.mark.cross_tenant("api-sessions")
def test_submitting_into_another_orgs_project_is_a_404_and_stores_nothing(cast, token_client):
    from memories.models import AgentSession

    response = _post(token_client(cast.org_b), project="web-app")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert not AgentSession.objects.exists()
