"""The LLM that answers consolidation's prompts from the set's labels (``consolidation_quality.py``'s
``scripted`` modes)."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any

from _quality_set import DISAGREE, Dataset

# --- the judge that answers from the labels --------------------------------------------------------------

SYNTHESIS_PREFIX = "You are consolidating"


# the batched synthesis (consolidation/prompts/synthesis_batch.py): clusters, each with its members
SYNTHESIS_BATCH_PREFIX = "Consolidate each of these "
_CLUSTER = re.compile(r"^Cluster (C\d+) — members (.+):$", re.MULTILINE)
CONTRADICTION_PREFIX = "Do these two statements contradict"
PATTERN_PREFIX = "Analyze these episodic memories"
# the batched judge's prompt (consolidation/prompts/judge_batch.py): its memories, then its pairs
_BATCH_MEMORY = re.compile(
    r"^\[(M\d+)\] recorded [^\n]*\n(Title: [^\n]*\nContent: .*?)(?=\n\[M\d+\] recorded |\nPairs \()",
    re.MULTILINE | re.DOTALL,
)
_BATCH_PAIR = re.compile(r"^(P\d+): (M\d+) → (M\d+)$", re.MULTILINE)


class LabelJudge:
    """An LLM for the consolidation run that tells the truth as the labels have it.

    Prompts are routed by type the way ``tests/consolidation/vectors.py`` ``cycle_llm`` does; the
    memories a judge prompt is about are found by their stored content (unique in the set). Every
    question is counted by the pair's label, so the report says what the judge was shown. Thread
    safe: the run asks several prompts at once (``CONSOLIDATION_LLM_CONCURRENCY``)."""

    provider = "bench"
    model = "label-judge-1"

    def __init__(self, ds: Dataset, contents: dict[str, str]) -> None:
        self.ds = ds
        # longest first, so a content that contains another is found before it
        self.contents = sorted(contents.items(), key=lambda kv: -len(kv[0]))
        self.asked: dict[str, Counter[str]] = {"supersession": Counter(), "contradiction": Counter()}
        self.prompts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _refs(self, prompt: str) -> list[str]:
        found = [(prompt.find(text), ref) for text, ref in self.contents if text in prompt]
        return [ref for _, ref in sorted(found)]

    def _count(self, what: str, refs: list[str]) -> str:
        label = self.ds.label(refs[0], refs[1]) if len(refs) == 2 else "unknown"
        with self._lock:
            self.asked[what][label] += 1
        return label

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> Any:
        from consolidation.prompts.judge import SUPERSESSION_SYSTEM_PROMPT
        from consolidation.prompts.summaries import SUMMARY_SYSTEM_PROMPT
        from reasoningbank.ai.llm import LLMPermanentError, LLMResult

        summary_system = SUMMARY_SYSTEM_PROMPT
        if "Pairs (OLDER → NEWER):" in prompt:
            kind, text = "judge_batch", self._judge_batch(prompt)
        elif prompt.startswith(SYNTHESIS_PREFIX):
            kind, text = "synthesis", self._synthesis(prompt)
        elif prompt.startswith(SYNTHESIS_BATCH_PREFIX):
            kind, text = "synthesis_batch", self._synthesis_batch(prompt)
        elif system == SUPERSESSION_SYSTEM_PROMPT:
            kind, text = "supersession", self._supersession(prompt)
        elif summary_system is not None and system == summary_system:
            kind, text = "summary", self._summary(prompt)
        elif prompt.startswith(CONTRADICTION_PREFIX):
            kind, text = "contradiction", self._contradiction(prompt)
        elif prompt.startswith(PATTERN_PREFIX):
            kind, text = "patterns", "[]"
        else:  # a prompt type this bench does not know: a failed call, which the run reports
            with self._lock:
                self.prompts["unknown"] += 1
            raise LLMPermanentError(f"bench judge: unknown prompt {prompt[:80]!r}", provider=self.provider)
        with self._lock:
            self.prompts[kind] += 1
        return LLMResult(
            text=text,
            provider=self.provider,
            model=self.model,
            input_tokens=len(prompt) // 4,
            output_tokens=len(text) // 4,
            latency_ms=0.0,
            attempts=1,
        )

    def _judge_batch(self, prompt: str) -> str:
        """Each listed pair answered from its label as the two single-pair questions would be: supersedes
        for a supersession in its dated direction, contradicts for a disagreeing pair, else compatible."""
        blocks = {label: block for label, block in _BATCH_MEMORY.findall(prompt)}
        items = []
        for pair_label, older, newer in _BATCH_PAIR.findall(prompt):
            refs = [self._ref(blocks.get(older, "")), self._ref(blocks.get(newer, ""))]
            known = [r for r in refs if r is not None]
            label = self._count("contradiction", known)
            self._count("supersession", known)
            pair = self.ds.by_pair.get(frozenset(known)) if len(known) == 2 else None
            if label == "supersession" and pair is not None and (pair.a, pair.b) == (known[0], known[1]):
                verdict = "supersedes"
            elif label in DISAGREE:
                verdict = "contradicts"
            else:
                verdict = "compatible"
            items.append(
                {
                    "pair": pair_label,
                    "older": older,
                    "newer": newer,
                    "reasoning": "Compared both memories against the labelled set.",
                    "verdict": verdict,
                    "confidence": 0.9,
                    "explanation": f"labelled {label}",
                }
            )
        return json.dumps(items)

    def _ref(self, block: str) -> str | None:
        found = self._refs(block)
        return found[0] if found else None

    def _supersession(self, prompt: str) -> str:
        refs = self._refs(prompt)  # in prompt order: OLDER first, then NEWER
        label = self._count("supersession", refs)
        pair = self.ds.by_pair.get(frozenset(refs)) if len(refs) == 2 else None
        yes = label == "supersession" and pair is not None and (pair.a, pair.b) == (refs[0], refs[1])
        return json.dumps(
            {"supersedes": yes, "confidence": "high", "reason": "the newer memory records the change" if yes else None}
        )

    def _contradiction(self, prompt: str) -> str:
        label = self._count("contradiction", self._refs(prompt))
        yes = label in DISAGREE  # a supersession pair disagrees too, if it ever reaches this question
        return json.dumps(
            {
                "reasoning": "Compared both statements against the labelled set.",
                "contradicts": yes,
                "confidence": 0.9 if yes else 0.1,
                "explanation": f"labelled {label}",
            }
        )

    @staticmethod
    def _synthesis(prompt: str) -> str:
        titles = [line[len("Title: ") :] for line in prompt.splitlines() if line.startswith("Title: ")]
        contents = [line[len("Content: ") :] for line in prompt.splitlines() if line.startswith("Content: ")]
        body = "\n".join(f"- {c}" for c in contents) or "Merged guidance."
        return (
            f"TITLE: {(titles[0] if titles else 'Consolidated strategy')[:180]}\n"
            f"CONTENT: {body}\n"
            "TAGS: consolidated\n"
            "OUTCOME: success\n"
            f"SOURCE_ATTRIBUTION: Synthesized from {len(titles)} source memories"
        )

    @classmethod
    def _synthesis_batch(cls, prompt: str) -> str:
        """Each listed cluster answered as the single synthesis and summary prompts are, under its id and
        members."""
        blocks = _CLUSTER.split(prompt.split("\nFor each cluster, ", 1)[0])[1:]
        answers = []
        for label, members, text in zip(blocks[0::3], blocks[1::3], blocks[2::3], strict=True):
            titles = [line[len("Title: ") :] for line in text.splitlines() if line.startswith("Title: ")]
            contents = [line[len("Content: ") :] for line in text.splitlines() if line.startswith("Content: ")]
            labels = [m.strip() for m in members.split(",")]
            answers.append(
                {
                    "cluster": label,
                    "members": labels,
                    "title": (titles[0] if titles else "Consolidated strategy")[:180],
                    "content": "\n".join(f"- {c}" for c in contents) or "Merged guidance.",
                    "tags": ["consolidated"],
                    "outcome": "success",
                    "source_attribution": f"Synthesized from {len(titles)} source memories",
                    "summary": f"Summary of {len(labels)} memories.",
                    "key_facts": [f"fact from {m}" for m in labels],
                    "decisions": [],
                    "superseded_facts": [],
                }
            )
        return json.dumps(answers)

    @staticmethod
    def _summary(prompt: str) -> str:
        ids = [line[len("Memory id: ") :] for line in prompt.splitlines() if line.startswith("Memory id: ")]
        return json.dumps(
            {
                "summary": f"Summary of {len(ids)} memories.",
                "key_facts": [f"fact from {mid}" for mid in ids],
                "decisions": [],
                "superseded_facts": [],
            }
        )
