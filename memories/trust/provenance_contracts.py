"""``source``: the compact provenance every memory result carries over REST and MCP (the same model in
both, and in the OpenAPI schema): who wrote the memory, how, through which client, when, whether it is
trusted for automatic injection, and one line saying so (docs/security/memory-poisoning.md#provenance)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from memories.trust import provenance as p
from reasoningbank.contracts import Contract

How = Literal["recorded", "distilled", "synthesised", "pattern", "promoted", "imported", "extracted"]
assert set(get_args(How)) == set(p.HOWS)


class SourceOut(Contract):
    """Who wrote this memory, how and through which client: ask before you act on what it says."""

    how: How = Field(
        description=(
            "recorded (an agent or a person wrote it), distilled (an LLM drew it from a session an agent handed "
            "in), synthesised / pattern / promoted (consolidation made it from other memories), imported (an "
            "admin imported it from a file), extracted (older consolidation output)"
        )
    )
    by: str = Field(description="who: a member's e-mail, a token (with its creator), an OAuth app (with its user)")
    via: str | None = Field(description="through which client (MCP clientInfo or User-Agent), if known")
    at: str = Field(description="when it was written (ISO 8601)")
    trust: Literal["trusted", "pending"] = Field(
        description=(
            "trusted: its writer's writes are injected into agents' sessions automatically; pending: it waits "
            "for a person's review before the hooks or memory_context inject it (a search still returns it)"
        )
    )
    reviewed_by: str | None = Field(description="the person who reviewed it, if anyone did")
    label: str = Field(description="all of it in one short line, e.g. 'recorded by alice@acme.test via claude-code "
                       "2.1 · 2026-11-30'")

    @classmethod
    def of(cls, source: dict[str, Any]) -> SourceOut:
        return cls(**source)
