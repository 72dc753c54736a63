"""A scripted fake LLM for the layers above the providers (the providers themselves are tested
through their real SDKs against respx). Each call pops the next scripted reply; an exception
instance in the script is raised instead. Prompts are kept for assertions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reasoningbank.ai.llm import LLMResult


@dataclass
class ScriptedLLM:
    script: list[str | Exception | Callable[[str, str], str]] = field(default_factory=list)
    provider: str = "fake"
    model: str = "scripted-1"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> LLMResult:
        self.calls.append((system, prompt))
        if not self.script:
            raise AssertionError(f"ScriptedLLM has no reply left for call {len(self.calls)}")
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        text = step(system, prompt) if callable(step) else step
        return LLMResult(
            text=text,
            provider=self.provider,
            model=self.model,
            input_tokens=len(prompt) // 4,
            output_tokens=len(text) // 4,
            latency_ms=1.0,
            attempts=1,
        )


def memory_block(n: int, title: str, description: str, content: str, tags: str = "x", outcome: str = "success") -> str:
    """One ``## Memory N`` block in the extraction format (memories/sessions/prompts.py)."""
    return (
        f"## Memory {n}\n**Title**: {title}\n**Description**: {description}\n"
        f"**Content**: {content}\n**Tags**: {tags}\n**Outcome**: {outcome}\n"
    )
