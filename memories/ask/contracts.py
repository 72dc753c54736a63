"""The ``memory_ask`` operation's contract (docs/search.md#asking-the-bank-memory_ask): a question
answered by the configured LLM reasoning over the memories the hybrid search retrieves for it, with
relative dates ("yesterday", "last week") resolved against each memory's recorded timestamp. One input
model, one output model and ``memory_ask_run``, shared by the MCP tool (``memories/mcp_tools.py``) and
``POST /api/v1/memories/ask`` (``memories/ask/api.py``).

The flow: retrieve, format with explicit timestamps, ask the
LLM with ``REASONING_SYSTEM_PROMPT`` (metered, within the org's budget), parse its JSON, then check
and complete its temporal resolutions with the deterministic resolver (``memories/ask/reasoning.py``,
``memories/ask/temporal.py``). Nothing is ever made up: no LLM configured, an LLM failure or an
unreadable reply is an error (503/502 over REST, an error result over MCP), never an answer; when the
search finds nothing, the answer says so without asking the LLM.

Retrieval is ``memory_search``'s read alone: asking records no usage signal (the memories are not
handed to the agent, only cited); with a ``session_id``, the memories the answer cites are noted in
the injection ledger, so the session's outcome reaches them.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from django.conf import settings
from django.utils import timezone
from pydantic import Field, StringConstraints

from accounts.access import Principal
from accounts.models import Organization
from memories.ask.reasoning import (
    REASONING_SYSTEM_PROMPT,
    CheckedResolution,
    ReasoningMemory,
    ReasoningParseError,
    build_reasoning_prompt,
    parse_reasoned_answer,
    resolutions_check,
)
from memories.core.contracts import SEARCH_PROJECT_DESCRIPTION, SessionRef
from memories.embedding import query_embed
from memories.models import Memory
from memories.search.selectors import SearchQuery, memory_search
from memories.sessions.services_ledger import session_uses_record
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_sources
from memories.validation import QUERY_MAX, session_key_clean, text_scrub
from reasoningbank.ai.llm import LLM, LLMPermanentError, LLMTransientError, LLMUnavailable, llm_from_settings
from reasoningbank.ai.metered import LLMBudgetExceeded, llm_complete
from reasoningbank.contracts import NOT_BLANK, NUL_FREE, Contract
from reasoningbank.errors import LimitExceeded, Unavailable, UpstreamFailed

logger = logging.getLogger(__name__)

ASK_DEFAULT_LIMIT = 10  # more context than a search's 5: a date question often needs several events
REPLY_MAX_TOKENS = 2048
NOTHING_FOUND = "Nothing relevant to this question is in the memory bank."
NO_LLM = (
    "memory_ask needs an LLM and none is configured (LLM_PROVIDER=none): set LLM_PROVIDER to anthropic or "
    "openai, and LLM_API_KEY. No answer is given without one."
)


class AskInput(Contract):
    question: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=QUERY_MAX, pattern=NOT_BLANK),
        Field(description='The question, in natural language (e.g. "When did we last rotate the deploy keys?")'),
    ]
    project: Annotated[
        str | None,
        StringConstraints(strip_whitespace=True, max_length=200, pattern=NUL_FREE),
        Field(description=SEARCH_PROJECT_DESCRIPTION),
    ] = None
    limit: Annotated[
        int, Field(description="How many memories to retrieve and reason over", ge=1, le=settings.SEARCH_MAX_LIMIT)
    ] = ASK_DEFAULT_LIMIT
    min_confidence: Annotated[float, Field(description="Only memories at least this trusted", ge=0.0, le=1.0)] = (
        settings.SEARCH_MIN_CONFIDENCE
    )
    mode: Annotated[
        Literal["reflexive", "standard", "deep", "exhaustive"],
        Field(
            description=(
                "Which memories to retrieve by tier, as memory_search: reflexive (hot only), standard (hot and "
                "warm), deep (also cold), exhaustive (every tier, archived memories included)"
            )
        ),
    ] = "standard"
    session_id: SessionRef = ""


class AskMemory(Contract):
    """A memory the LLM was shown, numbered as in its prompt (from 1)."""

    id: str
    title: str
    recorded_at: str = Field(description="the timestamp its relative dates are resolved against")
    cited: bool = Field(description="the answer rests on it (it is in source_memory_ids)")
    source: SourceOut = Field(description="who wrote it, how, through which client, when; and whether it is trusted")


class TemporalResolution(Contract):
    """A relative date of a memory and the absolute date it means."""

    original_text: str = Field(description='the phrase, e.g. "yesterday"')
    memory_timestamp: str = Field(description="when the memory holding it was recorded")
    resolved_date: str = Field(
        description="ISO 8601 at the phrase's precision: 2023-05-07 (a day), 2023-04 (a month), 2022 (a year), "
        "2023-05-01/2023-05-07 (another period)"
    )
    confidence: float
    source: Literal["llm", "resolver"] = Field(
        description="who resolved it: the LLM, or the deterministic resolver (a phrase in a cited memory the LLM "
        "left out)"
    )
    agrees: bool | None = Field(
        description="for the LLM's: whether the deterministic resolver reads the phrase the same way (null when "
        "it does not read that phrase, and for its own)"
    )
    corrected_from: str | None = Field(
        description="the LLM's date, when the resolver was sure it was wrong and replaced it (see warnings)"
    )
    memory_id: str | None = Field(description="the memory the phrase is in, when known")


class AskOutput(Contract):
    answer: str
    confidence: float = Field(description="the LLM's confidence in the answer, 0 to 1 (0 when nothing was found)")
    reasoning: str = Field(description="the LLM's step-by-step explanation")
    temporal_resolutions: list[TemporalResolution]
    source_memory_ids: list[str] = Field(description="the memories the answer rests on")
    requires_inference: bool = Field(
        description="the answer is inferred (e.g. a date resolved from a relative one), not stated in a memory"
    )
    memories: list[AskMemory] = Field(description="every memory retrieved and shown to the LLM, in prompt order")
    llm_called: bool = Field(description="false when no memory was found: the answer says so without asking")
    warnings: list[str] = Field(
        description="where the deterministic resolver disagreed with the LLM's dates, and what was done about it"
    )


def memory_ask_run(principal: Principal, args: AskInput) -> AskOutput:
    session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    llm = _llm_configured()  # before any work: without an LLM there is never an answer
    # a secret pasted into the question reaches neither the embedder nor the LLM, and a token of ours
    # in it is revoked, found or not (the LLM client scrubs every prompt again: reasoningbank/ai/outbound.py)
    question = text_scrub(args.question, seen_in="memory.ask")
    search = SearchQuery(
        query=question,
        limit=args.limit,
        min_confidence=float(args.min_confidence),
        project=args.project or None,
        mode=args.mode,
    )
    hits = memory_search(principal, search, query_vector=query_embed(question)).hits
    memories = [
        ReasoningMemory(
            id=hit.memory.id,
            title=hit.memory.title,
            description=hit.memory.description,
            content=hit.memory.content,
            recorded_at=hit.memory.created_at,
        )
        for hit in hits
    ]
    if not memories:
        return AskOutput(
            answer=NOTHING_FOUND,
            confidence=0.0,
            reasoning=(
                f"The search ({args.mode} mode, min_confidence {args.min_confidence}) found no memory for this "
                "question within this token's reach, so the LLM was not asked."
            ),
            temporal_resolutions=[],
            source_memory_ids=[],
            requires_inference=False,
            memories=[],
            llm_called=False,
            warnings=[],
        )
    prompt = build_reasoning_prompt(question, memories, asked_at=timezone.now())
    text = _complete(principal.organization, prompt, llm)
    try:
        reply = parse_reasoned_answer(text, memory_count=len(memories))
    except ReasoningParseError as exc:
        logger.warning("memory_ask: unreadable LLM reply (%s): %.500r", exc, exc.raw)
        raise UpstreamFailed(
            f"The LLM's reply could not be read as the JSON answer asked for ({exc}); no answer is given. "
            "Asking again may help.",
            code="llm_reply_invalid",
        ) from None
    checked, warnings = resolutions_check(reply.temporal_resolutions, memories, reply.source_memory_indices)
    if reply.ignored_indices:
        numbers = ", ".join(str(n) for n in reply.ignored_indices)
        warnings += (f"The LLM cited memory numbers that were not shown ({numbers}); they were left out.",)
    cited = [memories[n - 1].id for n in reply.source_memory_indices]
    sources = memory_sources([hit.memory for hit in hits])
    if args.session_id:  # the memories the answer rests on, as memory_search notes what it returns
        active = {hit.memory.id for hit in hits if hit.memory.state == Memory.STATE_ACTIVE}
        session_uses_record(
            principal=principal,
            session_key=args.session_id,
            via="search",
            memory_ids=[pk for pk in cited if pk in active],
        )
    return AskOutput(
        answer=reply.answer,
        confidence=round(reply.confidence, 4),
        reasoning=reply.reasoning,
        temporal_resolutions=[_resolution(item, memories) for item in checked],
        source_memory_ids=cited,
        requires_inference=reply.requires_inference,
        memories=[
            AskMemory(
                id=m.id, title=m.title, recorded_at=m.recorded_at.isoformat(), cited=m.id in cited,
                source=SourceOut.of(sources[m.id]),
            )
            for m in memories
        ],
        llm_called=True,
        warnings=list(warnings),
    )


def _resolution(item: CheckedResolution, memories: list[ReasoningMemory]) -> TemporalResolution:
    return TemporalResolution(
        original_text=item.original_text,
        memory_timestamp=item.memory_timestamp,
        resolved_date=item.resolved_date,
        confidence=round(item.confidence, 4),
        source=item.source,
        agrees=item.agrees,
        corrected_from=item.corrected_from,
        memory_id=memories[item.memory_index - 1].id if item.memory_index is not None else None,
    )


def _llm_configured() -> LLM:
    """The configured LLM, or the error saying which setting is missing (a provider without its key
    fails when it is built)."""
    try:
        llm = llm_from_settings()
    except LLMPermanentError as exc:
        raise Unavailable(f"memory_ask cannot use the configured LLM: {exc}", code="llm_not_configured") from None
    if llm.provider == "none":
        raise Unavailable(NO_LLM, code="llm_not_configured")
    return llm


def _complete(organization: Organization, prompt: str, llm: LLM) -> str:
    """The LLM's reply through the metered path (budget checked first, the call recorded either way);
    its failures as the operation's errors."""
    try:
        result = llm_complete(
            organization=organization,
            purpose="reason",
            system=REASONING_SYSTEM_PROMPT,
            prompt=prompt,
            max_tokens=REPLY_MAX_TOKENS,
            llm=llm,
        )
    except LLMBudgetExceeded as exc:
        raise LimitExceeded(f"No answer: {exc}.") from None
    except LLMUnavailable:
        raise Unavailable(NO_LLM, code="llm_not_configured") from None
    except LLMTransientError as exc:
        raise Unavailable(f"The LLM did not answer ({exc}); try again later.", code="llm_unavailable") from None
    except LLMPermanentError as exc:
        raise UpstreamFailed(f"The LLM refused the request: {exc}", code="llm_error") from None
    return result.text
