"""One example of each consolidation prompt, for the provider check (``reasoningbank.ai.prompt_kinds``,
docs/llm.md#checking-a-provider): the prompt the phase sends, built by the same builder from the same
fixed texts, with a small made-up bank, and the parser the phase reads the reply with."""

from __future__ import annotations

from datetime import UTC, datetime

from consolidation.prompts.judge import (
    CONTRADICTION_SYSTEM_PROMPT,
    SUPERSESSION_SYSTEM_PROMPT,
    build_contradiction_prompt,
    build_supersession_prompt,
    parse_contradiction,
    parse_supersession,
)
from consolidation.prompts.judge_batch import (
    JUDGE_BATCH_SYSTEM_PROMPT,
    BatchMemory,
    BatchPair,
    batch_max_tokens,
    build_judge_batch_prompt,
    parse_judge_batch,
)
from consolidation.prompts.patterns import PATTERN_SYSTEM_PROMPT, build_pattern_prompt, parse_patterns
from consolidation.prompts.reply import SourceMemory
from consolidation.prompts.summaries import SUMMARY_SYSTEM_PROMPT, build_summary_prompt, parse_summary
from consolidation.prompts.synthesis import SYNTHESIS_SYSTEM_PROMPT, build_synthesis_prompt, parse_synthesis
from consolidation.prompts.synthesis_batch import (
    SYNTHESIS_BATCH_SYSTEM_PROMPT,
    BatchCluster,
    build_synthesis_batch_prompt,
    parse_synthesis_batch,
    synthesis_batch_max_tokens,
)
from reasoningbank.ai.prompt_kinds import PromptExample

_MONDAY = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
_TUESDAY = datetime(2026, 3, 3, 14, 0, tzinfo=UTC)

_SOURCES = (
    SourceMemory(
        id="mem_a1",
        title="Bound database calls with a timeout",
        content="Wrap every database call in a context with a 5 s timeout; handle the deadline error by retrying once.",
        tags=("database", "timeout"),
        confidence=0.8,
        usage_count=4,
        outcome="success",
        created_at=_MONDAY,
    ),
    SourceMemory(
        id="mem_b2",
        title="Database calls need a deadline",
        content="A query without a deadline hung the worker for an hour; give each query a timeout and retry once.",
        tags=("database", "incident"),
        confidence=0.7,
        usage_count=1,
        outcome="success",
        created_at=_TUESDAY,
    ),
)


def synthesis_example() -> PromptExample:
    return PromptExample(SYNTHESIS_SYSTEM_PROMPT, build_synthesis_prompt(_SOURCES), parse_synthesis)


def synthesis_batch_example() -> PromptExample:
    laptop = "A deploy from a laptop shipped a stale build; deploy from CI."
    deploys = (
        SourceMemory(
            "mem_c3", "Deploy from CI only", "Deploys run from CI, never a laptop.", (), 0.8, 2, "success", _MONDAY
        ),
        SourceMemory("mem_d4", "No deploys from laptops", laptop, ("deploy",), 0.7, 0, "failure", _TUESDAY),
    )
    clusters = [
        BatchCluster("C1", (("M1", _SOURCES[0]), ("M2", _SOURCES[1]))),
        BatchCluster("C2", (("M3", deploys[0]), ("M4", deploys[1]))),
    ]

    def parse(text: str) -> object:
        # the check's verdict: every cluster answered attributably, with its summary, as the phase needs it
        answers = parse_synthesis_batch(text, clusters)
        if len(answers) != len(clusters):
            raise ValueError(f"the reply answered {len(answers)} of {len(clusters)} clusters attributably")
        if any(answer.summary is None for answer in answers.values()):
            raise ValueError("the reply left out a cluster's summary")
        return answers

    prompt = build_synthesis_batch_prompt(clusters)
    return PromptExample(SYNTHESIS_BATCH_SYSTEM_PROMPT, prompt, parse, max_tokens=synthesis_batch_max_tokens(2))


def supersession_example() -> PromptExample:
    older = ("Deploys run on Jenkins", "The deploy pipeline runs on the Jenkins server in the office.", _MONDAY)
    newer = ("Deploys moved to GitHub Actions", "Jenkins is retired; deploys run on GitHub Actions now.", _TUESDAY)
    return PromptExample(SUPERSESSION_SYSTEM_PROMPT, build_supersession_prompt(older, newer), parse_supersession)


def contradiction_example() -> PromptExample:
    return PromptExample(
        CONTRADICTION_SYSTEM_PROMPT,
        build_contradiction_prompt(
            "Run the test suite with pytest -n auto: the tests are independent.",
            "Never run the test suite in parallel: the tests share one database and fail together.",
        ),
        parse_contradiction,
    )


def judge_batch_example() -> PromptExample:
    memories = [
        BatchMemory(
            "M1", "Deploys run on Jenkins", "The deploy pipeline runs on the Jenkins server in the office.", _MONDAY
        ),
        BatchMemory(
            "M2", "Deploys moved to GitHub Actions", "Jenkins is retired; deploys run on GitHub Actions now.", _TUESDAY
        ),
        BatchMemory(
            "M3", "Parallel tests", "Run the test suite with pytest -n auto: the tests are independent.", _MONDAY
        ),
        BatchMemory(
            "M4", "Serial tests", "Never run the test suite in parallel: the tests share one database.", _TUESDAY
        ),
        BatchMemory("M5", _SOURCES[0].title, _SOURCES[0].content, _MONDAY),
        BatchMemory("M6", _SOURCES[1].title, _SOURCES[1].content, _TUESDAY),
    ]
    pairs = [BatchPair("P1", "M1", "M2"), BatchPair("P2", "M3", "M4"), BatchPair("P3", "M5", "M6")]

    def parse(text: str) -> object:
        # the check's verdict: every pair answered and attributable, as the judge phase needs it
        verdicts = parse_judge_batch(text, pairs)
        if len(verdicts) != len(pairs):
            raise ValueError(f"the reply answered {len(verdicts)} of {len(pairs)} pairs attributably")
        return verdicts

    prompt = build_judge_batch_prompt(memories, pairs)
    return PromptExample(JUDGE_BATCH_SYSTEM_PROMPT, prompt, parse, max_tokens=batch_max_tokens(len(pairs)))


def pattern_example() -> PromptExample:
    episodes = [
        (_MONDAY, "Ran the tests before committing; a failing migration test caught a typo."),
        (_TUESDAY, "Ran the tests before pushing; the linter flagged an unused import."),
        (datetime(2026, 3, 4, 11, 0, tzinfo=UTC), "Ran the tests first again before a commit; all green."),
    ]
    return PromptExample(PATTERN_SYSTEM_PROMPT, build_pattern_prompt(episodes), parse_patterns)


def summary_example() -> PromptExample:
    ids = [str(source.id) for source in _SOURCES]
    return PromptExample(SUMMARY_SYSTEM_PROMPT, build_summary_prompt(_SOURCES), lambda text: parse_summary(text, ids))
