"""One example of each prompt this app sends an LLM — distilling a session, answering ``memory_ask``,
rewriting a deep search's question —
for the provider check (``reasoningbank.ai.prompt_kinds``, docs/llm.md#checking-a-provider): built by the
same builders from the same fixed texts as the real calls, with a small made-up input, and read by the
same parsers."""

from __future__ import annotations

from datetime import UTC, datetime

from memories.ask.reasoning import (
    REASONING_SYSTEM_PROMPT,
    ReasoningMemory,
    build_reasoning_prompt,
    parse_reasoned_answer,
)
from memories.search.rewrite import REWRITE_MAX_TOKENS, REWRITE_SYSTEM_PROMPT, rewrite_parse, rewrite_prompt
from memories.sessions.prompts import DISTILL_SYSTEM_PROMPT, build_extraction_prompt, parse_extractions
from reasoningbank.ai.prompt_kinds import PromptExample

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

_TRACE = """\
user: the checkout test fails about one run in five on CI
assistant: ran `pytest tests/test_checkout.py -x -p no:randomly` 20 times: 4 failures, always after test_refund
assistant: test_refund mutates the shared `cart` fixture (module scope); changed it to function scope
assistant: ran the file 50 times: no failure. Committed "tests: a fresh cart per test".
user: thanks, CI is green"""

_MEMORIES = (
    ReasoningMemory(
        id="mem_1",
        title="Deploy keys rotated",
        description="Rotation of the production deploy keys",
        content="Rotated the production deploy keys yesterday after the contractor left.",
        recorded_at=datetime(2026, 3, 3, 16, 0, tzinfo=UTC),
    ),
    ReasoningMemory(
        id="mem_2",
        title="Staging keys",
        description="Staging uses its own keys",
        content="Staging has separate deploy keys, last rotated in January.",
        recorded_at=datetime(2026, 2, 20, 10, 0, tzinfo=UTC),
    ),
)


def distill_example() -> PromptExample:
    return PromptExample(
        DISTILL_SYSTEM_PROMPT, build_extraction_prompt(outcome="success", trace=_TRACE), parse_extractions
    )


def reason_example() -> PromptExample:
    prompt = build_reasoning_prompt(
        "When were the production deploy keys last rotated?",
        _MEMORIES,
        asked_at=datetime(2026, 3, 10, 9, 0, tzinfo=UTC),
    )
    return PromptExample(
        REASONING_SYSTEM_PROMPT, prompt, lambda text: parse_reasoned_answer(text, memory_count=len(_MEMORIES))
    )


def search_rewrite_example() -> PromptExample:
    question = "Which keys did we rotate after the contractor left, and when?"
    return PromptExample(
        REWRITE_SYSTEM_PROMPT,
        rewrite_prompt(question),
        lambda text: rewrite_parse(text, question),
        max_tokens=REWRITE_MAX_TOKENS,
    )
