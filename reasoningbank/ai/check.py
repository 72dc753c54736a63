"""The provider check (docs/llm.md#checking-a-provider): one example of every prompt kind sent to an LLM,
and, per kind, whether its reply parsed, with the latency and tokens — what ``manage.py llm_check`` prints
and the system page shows.

The calls are the operator's, made for no organization: nothing is metered against a tenant's budget.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from reasoningbank.ai.llm import LLM, LLMError, LLMUnreachable
from reasoningbank.ai.prompt_kinds import PromptKind, prompt_kinds

logger = logging.getLogger("reasoningbank.llm")

REPLY_SHOWN = 300  # characters of an unreadable reply kept in the result, enough to see what went wrong

# "skipped": not sent, because an earlier kind found the provider out of reach (each would wait for the same
# refusal, with retries: ten kinds took 85 s to say one thing)
Stage = Literal["ok", "call", "parse", "skipped"]


@dataclass(frozen=True)
class KindCheck:
    kind: str
    purpose: str
    stage: Stage  # "ok"; "call": the provider failed; "parse": it answered, in a shape the parser refused
    error: str  # "" when it parsed
    latency_ms: float
    input_tokens: int | None  # None when the call failed
    output_tokens: int | None
    tokens_estimated: bool
    attempts: int
    reply: str  # the head of a reply that did not parse, else ""
    unreachable_url: str = ""  # where the provider was looked for, when it could not be reached at all

    @property
    def parsed(self) -> bool:
        return self.stage == "ok"


def llm_check_kind(llm: LLM, kind: PromptKind) -> KindCheck:
    """Send ``kind``'s example to ``llm`` and parse the reply with the service's own parser."""
    example = kind.example()
    started = time.perf_counter()
    try:
        result = llm.complete(system=example.system, prompt=example.prompt, max_tokens=example.max_tokens)
    except LLMError as exc:
        check = KindCheck(
            kind=kind.name,
            purpose=kind.purpose,
            stage="call",
            error=str(exc),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            input_tokens=None,
            output_tokens=None,
            tokens_estimated=False,
            attempts=exc.attempts or 1,
            reply="",
            unreachable_url=exc.url if isinstance(exc, LLMUnreachable) else "",
        )
    else:
        error, reply = "", ""
        try:
            example.parse(result.text)
        except ValueError as exc:  # every parser's error is a ValueError (its ParseError)
            error, reply = str(exc) or type(exc).__name__, result.text[:REPLY_SHOWN]
        check = KindCheck(
            kind=kind.name,
            purpose=kind.purpose,
            stage="parse" if error else "ok",
            error=error,
            latency_ms=result.latency_ms,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            tokens_estimated=result.tokens_estimated,
            attempts=result.attempts,
            reply=reply,
        )
    logger.info(
        "LLM check %s: %s",
        kind.name,
        check.stage,
        extra={"provider": llm.provider, "model": llm.model, "kind": kind.name, "error": check.error[:500]},
    )
    return check


def llm_check_skipped(kind: PromptKind, url: str) -> KindCheck:
    """``kind`` not sent: the provider at ``url`` was found out of reach by an earlier kind."""
    return KindCheck(
        kind=kind.name,
        purpose=kind.purpose,
        stage="skipped",
        error=f"not sent: {url} could not be reached",
        latency_ms=0.0,
        input_tokens=None,
        output_tokens=None,
        tokens_estimated=False,
        attempts=0,
        reply="",
    )


def llm_check(llm: LLM, kinds: Iterable[PromptKind] | None = None) -> list[KindCheck]:
    """Every kind (or those given) in turn: one after the other, so each latency is the provider's alone.
    Once one finds the provider out of reach, the rest are skipped, not sent."""
    results: list[KindCheck] = []
    for kind in prompt_kinds() if kinds is None else kinds:
        url = next((r.unreachable_url for r in results if r.unreachable_url), "")
        results.append(llm_check_skipped(kind, url) if url else llm_check_kind(llm, kind))
    return results
