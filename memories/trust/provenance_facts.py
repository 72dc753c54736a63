"""The facts a memory's provenance is built from, gathered where the write happens
(docs/security/memory-poisoning.md#provenance): who (the principal: user, API token and its creator,
OAuth app and the user who connected it, with their role now), through which client (the request
context: MCP ``clientInfo``, User-Agent), and how (``ProvenanceInput``, which each creation path fills:
the session, the run, the sources, the import). ``memory_provenance`` turns them into the stored
provenance and the ``trust`` decision (``memories/trust/provenance.py``, pure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, Membership
from memories.models import AgentSession, Memory
from memories.trust import provenance as p
from memories.trust.provenance_selectors import memories_provenance
from reasoningbank.models import LlmCall
from reasoningbank.request_context import request_client


@dataclass(frozen=True)
class ProvenanceInput:
    """How a write came about, as its caller knows it: ``memories_create`` adds who and through which
    client. Recording needs nothing more than ``how``; distillation names the session (whose LLM call
    names the model); consolidation the run and the sources. (An import writes its rows itself:
    ``memories/transfer/writer.py`` builds their provenance from the same parts.)"""

    how: str = p.HOW_RECORDED
    session: AgentSession | None = None
    run_id: str = ""
    sources: Sequence[Memory] = ()


def _role_of(organization_id: int, user_id: int | None) -> str | None:
    if user_id is None:
        return None
    return (
        Membership.objects.filter(organization_id=organization_id, user_id=user_id)
        .values_list("role", flat=True)
        .first()
    )


def writer_by(principal: Principal) -> dict[str, Any]:
    """Who is writing, with the role now of the person behind it (a token's creator, the user who
    connected an OAuth app): what ``memory_trust_decide`` reads."""
    org_id = principal.organization.pk
    if principal.token is not None:
        token = principal.token
        creator = token.created_by if token.created_by_id is not None else None
        return p.by_facts(
            p.BY_TOKEN,
            token_id=token.pk,
            token_prefix=token.prefix,
            token_label=token.label,
            token_creator_id=creator.pk if creator is not None else None,
            token_creator_email=creator.email if creator is not None else "",
            role=_role_of(org_id, token.created_by_id),
        )
    if principal.oauth_connection is not None:
        application = principal.oauth_connection.application
        user = principal.user
        return p.by_facts(
            p.BY_OAUTH,
            user_id=user.pk if user is not None else None,
            email=user.email if user is not None else "",
            role=_role_of(org_id, user.pk if user is not None else None),
            oauth_client_id=application.client_id,
            oauth_app_name=application.name,
        )
    if principal.user is not None:
        return p.by_facts(p.BY_USER, user_id=principal.user.pk, email=principal.user.email, role=principal.role)
    return p.by_facts(p.BY_SYSTEM)


def writer_client(principal: Principal) -> dict[str, Any]:
    """Through which client the current request came (``internal`` outside a request). A 2025-11-25 MCP
    client named itself only in its ``initialize``: its name is recalled for the credential."""
    client = request_client()
    name, version = client.name, client.version
    if client.transport == "mcp" and not name:
        # imported here: the MCP SDK is loaded by the MCP endpoint only, never at start-up
        # (tests/reasoningbank/test_startup_imports.py)
        from accounts.mcp_auth import mcp_client_recall

        recalled = mcp_client_recall(principal, client.user_agent)
        if recalled is not None:
            name, version = recalled
    return p.client_facts(client.transport, name=name, version=version, user_agent=client.user_agent)


def submitted_provenance(principal: Principal, *, at: datetime) -> dict[str, Any]:
    """Who handed a session in, and through which client: stored on the session at submission
    (``AgentSession.submitted_provenance``); the memories distilled from it inherit it."""
    return {"v": p.VERSION, "at": at.isoformat(), "by": writer_by(principal), "client": writer_client(principal)}


def _session_submitter(session: AgentSession) -> tuple[dict[str, Any], dict[str, Any]]:
    """The submitter of ``session`` (by, client): as stored at submission, or — for a session handed in
    before provenance — its submitting token, now."""
    stored = session.submitted_provenance or {}
    if stored.get("by"):
        return dict(stored["by"]), dict(stored.get("client") or p.client_facts("internal"))
    token = session.submitted_by_token
    if token is None:
        return p.by_facts(p.BY_SYSTEM), p.client_facts("internal")
    creator = token.created_by if token.created_by_id is not None else None
    by = p.by_facts(
        p.BY_TOKEN,
        token_id=token.pk,
        token_prefix=token.prefix,
        token_label=token.label,
        token_creator_id=creator.pk if creator is not None else None,
        token_creator_email=creator.email if creator is not None else "",
        role=_role_of(session.organization_id, token.created_by_id),
    )
    return by, p.client_facts("internal")


def _distilling_model(session: AgentSession) -> str:
    """The model whose reply the session's memories were distilled from: its latest successful distillation
    call (``llm_complete`` records every call, for the session)."""
    model = (
        LlmCall.objects.for_subject(session)
        .filter(purpose="distill", outcome=LlmCall.OUTCOME_OK)
        .order_by("-created_at", "-id")
        .values_list("model", flat=True)
        .first()
    )
    return model or ""


def memory_provenance(principal: Principal, written: ProvenanceInput, *, at: datetime) -> tuple[dict[str, Any], str]:
    """The provenance of a memory written now by ``principal`` as ``written`` says, and its trust."""
    org = principal.organization
    trusted_clients = list(org.trusted_oauth_clients or ())
    how = written.how
    if how == p.HOW_DISTILLED and written.session is not None:
        by, client = _session_submitter(written.session)
        session = p.session_facts(
            session_id=written.session.pk, key=written.session.external_id, model=_distilling_model(written.session)
        )
        provenance = p.provenance_build(how=how, at=at, by=by, client=client, session=session)
        return provenance, p.memory_trust_decide(how=how, by=by, trusted_oauth_clients=trusted_clients)
    if how in p.DERIVED:
        # consolidation wrote it, whoever asked for the run (the run names them): the service, from sources
        described = memories_provenance(written.sources)
        sources = []
        for memory in written.sources:
            source = described.get(memory.pk, {})
            source_how = str(source.get("how") or p.HOW_RECORDED)
            by_text = p.by_label(source.get("by"), how=source_how)
            sources.append(p.source_facts(memory_id=memory.pk, how=source_how, by=by_text))
        by, client = p.by_facts(p.BY_SYSTEM), p.client_facts("internal")
        provenance = p.provenance_build(how=how, at=at, by=by, client=client, run=written.run_id, sources=sources)
        trust = p.memory_trust_decide(how=how, by=by, source_trusts=[m.trust for m in written.sources])
        return provenance, trust
    by = writer_by(principal)
    client = writer_client(principal)
    provenance = p.provenance_build(how=how, at=at, by=by, client=client)
    trust = p.memory_trust_decide(
        how=how, by=by, can_write=principal.has_scope(SCOPE_MEMORIES_WRITE), trusted_oauth_clients=trusted_clients
    )
    return provenance, trust
