"""Dashboard: agent sessions (list with status filter, detail, retry)."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from memories.models import AgentSession
from memories.sessions.services import session_process, session_submit
from tests.fakes import ScriptedLLM, memory_block

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.LLM_PROVIDER = "none"  # submitted sessions wait for an LLM instead of being queued


def submit(agent, session_id="run-1", trace="agent: fixed the flaky test by seeding the RNG"):
    return session_submit(principal=agent, session_id=session_id, outcome="success", trace=trace).session


def failed(agent, session_id="run-bad"):
    session = submit(agent, session_id)
    return session_process(session.id, llm=ScriptedLLM(["garbage", "more garbage"]))


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_session_list_shows_status_and_the_waiting_reason(client, cast, agent, who):
    submit(agent)
    client.force_login(getattr(cast, who))
    response = client.get("/sessions/")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html and 'aria-current="page">Sessions' in html
    assert "run-1" in html and "Waiting for LLM" in html and "no LLM provider is configured" in html
    # waiting is not an error, and Retry cannot help while no LLM is configured (the banner says what does)
    assert 'class="small warntext">waiting: no LLM provider' in html and "errtext" not in html
    assert "Retry</button>" not in html


def configure_llm(settings):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "sk-test"


def test_a_waiting_session_may_be_retried_once_an_llm_is_configured(client, cast, agent, settings):
    session = submit(agent)  # waits: no LLM when it came in
    configure_llm(settings)
    client.force_login(cast.alice)
    assert "Retry</button>" in client.get("/sessions/").content.decode()
    assert "Retry distillation" in client.get(f"/sessions/{session.id}/").content.decode()


def test_a_waiting_session_shows_no_retry_on_its_page_while_no_llm_is_configured(client, cast, agent):
    session = submit(agent)
    client.force_login(cast.alice)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "Waiting for LLM" in html and "Retry distillation" not in html
    assert '<div class="msg warning"><strong>Note:</strong> waiting: no LLM provider' in html


def test_a_failed_session_keeps_its_red_error_and_retry_without_an_llm(client, cast, agent):
    failed(agent)
    client.force_login(cast.alice)
    html = client.get("/sessions/").content.decode()
    assert 'class="small errtext">the LLM' in html and "Retry</button>" in html


def test_a_done_session_links_the_memories_it_produced(client, cast, agent):
    session = submit(agent)
    reply = memory_block(1, "Seed the RNG", "When tests flake", "Seed it in the setup.")
    session_process(session.id, llm=ScriptedLLM([reply]))
    client.force_login(cast.alice)
    html = client.get("/sessions/?status=done").content.decode()
    memory = AgentSession.objects.get(pk=session.pk).memories.get()
    assert f'href="/memories/{memory.id}/">Seed the RNG</a>' in html


def test_the_status_filter_narrows_the_list_and_htmx_gets_the_partial(client, cast, agent):
    submit(agent, "run-waiting")
    failed(agent, "run-failed")
    client.force_login(cast.alice)
    html = client.get("/sessions/?status=failed", **HX).content.decode()
    assert "<html" not in html and 'id="results"' in html
    assert "run-failed" in html and "run-waiting" not in html and "could not be parsed" in html


def test_an_invalid_status_filter_is_a_400_with_a_message(client, cast):
    client.force_login(cast.alice)
    for extra in ({}, HX):
        response = client.get("/sessions/?status=exploded", **extra)
        assert response.status_code == 400 and "status must be one of" in response.content.decode()


def test_the_session_list_is_paginated(client, cast, agent):
    for i in range(27):
        submit(agent, f"run-{i:02d}")
    client.force_login(cast.alice)
    first = client.get("/sessions/").content.decode()
    assert "Page 1 of 2" in first and first.count('href="/sessions/ses_') == 25
    assert client.get("/sessions/?page=2").content.decode().count('href="/sessions/ses_') == 2


def test_a_session_handed_in_again_after_its_distillation_says_how_often_it_was_distilled(client, cast, agent):
    session = submit(agent)
    client.force_login(cast.bob)
    assert "<dt>Distilled</dt><dd>not yet</dd>" in client.get(f"/sessions/{session.id}/").content.decode()
    session_process(session.id, llm=ScriptedLLM(["NO_EXTRACTIONS"]))
    resumed = session.trace + "\nuser: the promo test fails too\nagent: defaulted missing promo codes"
    session_submit(principal=agent, session_id="run-1", outcome="success", trace=resumed)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "<dt>Distilled</dt><dd>1 time · what came since waits for the next round</dd>" in html
    session_process(session.id, llm=ScriptedLLM(["NO_EXTRACTIONS"]))
    assert "<dt>Distilled</dt><dd>2 times</dd>" in client.get(f"/sessions/{session.id}/").content.decode()


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_the_session_detail_shows_trace_raw_reply_and_error(client, cast, agent, who):
    session = failed(agent)
    client.force_login(getattr(cast, who))
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "agent: fixed the flaky test" in html and "more garbage" in html and "could not be parsed" in html
    assert ("Retry distillation" in html) is (who == "alice")


def test_a_member_retries_a_failed_session_and_it_is_audited(client, cast, agent):
    session = failed(agent)
    client.force_login(cast.alice)
    response = client.post(f"/sessions/{session.id}/retry/", follow=True)
    assert response.redirect_chain[-1][0] == f"/sessions/{session.id}/"
    session.refresh_from_db()
    assert session.status == "waiting_for_llm" and session.attempts == 0  # no LLM configured: it waits, visibly
    assert "waiting for llm again" in response.content.decode().lower()
    assert AuditEvent.objects.filter(verb="session.retry", target_id=session.id, actor="user:alice@acme.test").exists()


def test_retry_from_the_list_returns_to_the_filtered_list(client, cast, agent):
    session = failed(agent)
    client.force_login(cast.alice)
    response = client.post(f"/sessions/{session.id}/retry/", {"next": "/sessions/?status=failed"})
    assert response.status_code == 302 and response["Location"] == "/sessions/?status=failed"
    evil = client.post(f"/sessions/{session.id}/retry/", {"next": "https://evil.example/"})
    assert evil["Location"] == f"/sessions/{session.id}/"


def test_retrying_a_done_session_is_a_flash_error(client, cast, agent):
    session = submit(agent)
    reply = memory_block(1, "Seed the RNG", "When tests flake", "Seed it in the setup.")
    session_process(session.id, llm=ScriptedLLM([reply]))
    client.force_login(cast.alice)
    response = client.post(f"/sessions/{session.id}/retry/", follow=True)
    assert response.status_code == 200 and "only failed or waiting sessions can be retried" in response.content.decode()


def test_a_viewer_cannot_retry(client, cast, agent):
    session = failed(agent)
    client.force_login(cast.bob)
    assert client.post(f"/sessions/{session.id}/retry/").status_code == 403
    session.refresh_from_db()
    assert session.status == "failed" and not AuditEvent.objects.filter(verb="session.retry").exists()


@pytest.mark.cross_tenant("session-list", "session-detail", "session-retry")
def test_another_orgs_session_is_a_404(client, cast, agent):
    session = failed(agent)
    client.force_login(cast.charlie)
    assert client.get(f"/sessions/{session.id}/").status_code == 404
    assert client.post(f"/sessions/{session.id}/retry/").status_code == 404
    assert session.external_id not in client.get("/sessions/").content.decode()
    session.refresh_from_db()
    assert session.status == "failed"


@pytest.mark.parametrize("path", ["/sessions/", "/sessions/ses_x/"])
def test_anonymous_visitors_of_sessions_are_sent_to_the_login_page(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_session_page_lists_the_memories_the_session_was_given(client, cast, agent):
    from memories.search.contracts import SearchInput, memory_search_run
    from tests.factories import MemoryFactory

    given = MemoryFactory(principal=agent, title="Seed the RNG in flaky tests", content="Seed it once per test.")
    memory_search_run(agent, SearchInput(query="seed the rng", session_id="run-1", limit=1, min_confidence=0))
    session = submit(agent)
    client.force_login(cast.bob)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "Memories given to this session" in html
    assert f'href="/memories/{given.id}/">Seed the RNG in flaky tests</a>' in html and "Search" in html


def test_the_session_page_shows_each_memorys_code_verdict_and_the_commits_tied_to_it(client, cast, agent):
    from memories.code_reports.services import session_code_report
    from memories.sessions.services_ledger import session_uses_record
    from tests.factories import MemoryFactory

    given = MemoryFactory(principal=agent, title="Seed the RNG in flaky tests")
    session_uses_record(principal=agent, session_key="run-1", memory_ids=[given.id], via="context")
    session_code_report(principal=agent, session_key="run-1", commit="ab12" * 10, status="committed")
    session_code_report(principal=agent, commit="ab12" * 10, status="reverted")
    session = submit(agent)
    client.force_login(cast.bob)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "<th>Code</th>" in html and 'class="pill outcome-failure"' in html and ">reverted</span>" in html
    assert '<code title="' + "ab12" * 10 + '">ab12ab12ab12</code> reverted' in html
