"""Deterministic, well-formed LLM replies for the benchmarks (no Django, no network).

``reply_for(system, prompt)`` recognises every prompt the product sends — distillation ("## Memory N"
blocks), consolidation synthesis (TITLE/CONTENT/...), cluster summaries (a JSON object), the batched
synthesis (a JSON array), the supersession and
contradiction judges (JSON objects), pattern extraction (a JSON array) and deep search's question
rewrite (``{"queries": [...]}``) — and answers in the format its parser expects. Used by the stub
OpenAI-compatible server (``bench/_stub_llm.py``)
for the distillation benchmark and by the fake LLM of the consolidation benchmark.

Distillation replies are derived from the session's task line (``User: <task>``) so different
sessions yield different memories, while sessions on the same task and lesson produce the same
text (the product then reinforces the existing memory instead of storing a near-duplicate).
"""

from __future__ import annotations

import hashlib
import json
import re

_TASK_RE = re.compile(r"^User: (.+)$", re.MULTILINE)
_TOPIC_RE = re.compile(r"\[topic (\d+)\]")

LESSONS = (
    (
        "Reproduce before fixing",
        "Write a failing test that reproduces the bug before changing code",
        "1. Reproduce with the smallest failing test. 2. Fix the cause. 3. Keep the test as a regression guard.",
    ),
    (
        "Read the full traceback",
        "When a test fails deep in a framework, read the whole traceback first",
        "The first frame in project code is usually the culprit; framework frames rarely are.",
    ),
    (
        "Pin tool versions in CI",
        "When CI differs from local runs, compare tool versions",
        "Lock the versions of linters and test runners; drift between machines causes phantom failures.",
    ),
    (
        "Migrate in two steps",
        "Adding a NOT NULL column to a busy table",
        "Add the column nullable with a default, backfill in batches, then add the constraint.",
    ),
    (
        "Avoid N+1 queries",
        "List views that touch related objects in a loop",
        "Use select_related/prefetch_related and assert the query count in a test.",
    ),
    (
        "Bisect flaky failures",
        "A test fails intermittently on CI only",
        "Run it in a loop with a fixed seed, then bisect the test order to find the polluting test.",
    ),
)


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def distill_reply(prompt: str) -> str:
    match = _TASK_RE.search(prompt)
    task = match.group(1).strip() if match else "an unnamed task"
    topic = _TOPIC_RE.search(task)
    topic_key = topic.group(1) if topic else task
    n = 1 + _h(prompt) % 3  # 1-3 memories, decided by the whole prompt
    blocks = []
    for i in range(n):
        # (topic, lesson) decides the text: repeats across sessions of a topic are near-duplicates
        lesson_index = (_h(topic_key) + i * 7 + (_h(prompt) >> 8) % 2) % len(LESSONS)
        title, description, content = LESSONS[lesson_index]
        words = task.replace("[", "").replace("]", "")
        blocks.append(
            f"## Memory {i + 1}\n"
            f"**Title**: {title[:36]} ({topic_key})\n"
            f"**Description**: {description} — seen while working on: {words[:80]}\n"
            f"**Content**: {content} Context: {words}. Applied in topic {topic_key}, lesson {lesson_index}.\n"
            f"**Tags**: bench, topic-{topic_key}, lesson-{lesson_index}\n"
            f"**Outcome**: {'failure' if lesson_index == 5 else 'success'}\n"
        )
    return "\n".join(blocks)


def synthesis_reply(prompt: str) -> str:
    titles = re.findall(r"^Title: (.*)$", prompt, re.MULTILINE)
    first = titles[0] if titles else "Consolidated strategy"
    return (
        f"TITLE: Consolidated: {first[:120]}\n"
        f"CONTENT: Common strategy distilled from {len(titles)} memories.\n"
        f"1. {first}\n2. Verify with a test before and after the change.\n"
        "TAGS: consolidated, bench\n"
        "OUTCOME: success\n"
        f"SOURCE_ATTRIBUTION: {len(titles)} similar memories about {first[:60]}"
    )


# what the stub's deep-search rewrite leaves out of a question: the question words and the commonest
# function words (the product's own stemming and stopwords handle the rest)
_QUESTION_WORDS = frozenset(
    "what when where who whom whose why how which did do does is was were are be been has have had the a an "
    "of to in on at for with by from and or her his their its she he they it that this".split()
)
_QUESTION_RE = re.compile(r"^Question: (.+)$", re.MULTILINE)


def rewrite_reply(prompt: str) -> str:
    """Deep search's question rewrite, mechanically: the capitalised names after the first word as one
    query, the question without its question and function words as another. Not a model: it proves
    the plumbing (prompt, call, parse, fusion, metering), never the quality of an LLM's rewrite."""
    match = _QUESTION_RE.search(prompt)
    words = re.findall(r"[A-Za-z][\w'-]*", match.group(1) if match else "")
    names = list(dict.fromkeys(w for w in words[1:] if w[0].isupper()))
    content = [w for w in words if w.lower() not in _QUESTION_WORDS]
    queries = [" ".join(names)] if names else []
    if content:
        queries.append(" ".join(content))
    return json.dumps({"queries": queries})


_BATCH_PAIR = re.compile(r"^(P\d+): (M\d+) → (M\d+)$", re.MULTILINE)
_BATCH_MEMORY = re.compile(r"^\[(M\d+)\] recorded .*\nTitle: .*\nContent: (.*)$", re.MULTILINE)


def judge_batch_reply(prompt: str) -> str:
    """The batched judge: one verdict per listed pair, as long as a model's (a sentence of reasoning and
    one of explanation each); every 7th pair by content is a confident contradiction, as in the
    single-pair stub below."""
    contents = dict(_BATCH_MEMORY.findall(prompt))
    items = []
    for pair, older, newer in _BATCH_PAIR.findall(prompt):
        contradicts = _h(contents.get(older, "") + contents.get(newer, "")) % 7 == 0
        items.append(
            {
                "pair": pair,
                "older": older,
                "newer": newer,
                "reasoning": "Both give advice on the same subject; compared what each says to do.",
                "verdict": "contradicts" if contradicts else "compatible",
                "confidence": 0.9 if contradicts else 0.8,
                "explanation": "they advise opposite steps" if contradicts else "the same advice, reworded",
            }
        )
    return json.dumps(items)


_SUMMARY_ID = re.compile(r"^Memory id: (.+)$", re.MULTILINE)


def summary_reply(prompt: str) -> str:
    """A cluster summary in the JSON shape its parser reads (consolidation/prompts/summaries.py), about as long
    as a model's: two sentences, a fact per source (up to five), one decision, the oldest source superseded."""
    ids = _SUMMARY_ID.findall(prompt)
    titles = re.findall(r"^Title: (.*)$", prompt, re.MULTILINE)
    first = titles[0] if titles else "the shared strategy"
    return json.dumps(
        {
            "summary": f"{len(ids)} related memories agree on one practice: {first[:80]}. "
            "They record when it helped and the check that confirms it worked.",
            "key_facts": [f"{title[:80]} (seen in practice)" for title in titles[:5]],
            "decisions": [
                {
                    "decision": f"Follow: {first[:80]}",
                    "rationale": "it prevented repeated failures in several sessions",
                    "outcome": "fewer regressions",
                    "confidence": "medium",
                }
            ],
            "superseded_facts": (
                [
                    {
                        "original_fact": "the first wording",
                        "superseded_by": "the latest wording",
                        "source_memory_id": ids[0],
                    }
                ]
                if len(ids) > 1
                else []
            ),
        }
    )


_CLUSTER = re.compile(r"^Cluster (C\d+) — members (.+):$", re.MULTILINE)
_CLUSTER_MEMORY = re.compile(r"^\[(M\d+)\][^\n]*\nTitle: (.*)$", re.MULTILINE)


def synthesis_batch_reply(prompt: str) -> str:
    """The batched synthesis (consolidation/prompts/synthesis_batch.py): per cluster, the memory the
    single synthesis reply above would give and the summary the summary reply would, as one JSON object
    naming the cluster and its members — as long as a model's answers to the two prompts."""
    titles = dict(_CLUSTER_MEMORY.findall(prompt))
    answers = []
    for cluster, members in _CLUSTER.findall(prompt):
        labels = [m.strip() for m in members.split(",")]
        named = [titles.get(m, "") for m in labels]
        first = named[0] if named else "Consolidated strategy"
        listed = "\n".join(f"Memory id: {m}\nTitle: {t}" for m, t in zip(labels, named, strict=True))
        summary = json.loads(summary_reply(listed))
        answers.append(
            {
                "cluster": cluster,
                "members": labels,
                "title": f"Consolidated: {first[:120]}",
                "content": f"Common strategy distilled from {len(labels)} memories.\n1. {first}\n"
                "2. Verify with a test before and after the change.",
                "tags": ["consolidated", "bench"],
                "outcome": "success",
                "source_attribution": f"{len(labels)} similar memories about {first[:60]}",
                **summary,
            }
        )
    return json.dumps(answers)


def reply_for(system: str, prompt: str) -> str:
    if "\nGenerated answer: " in prompt:  # bench/answer_accuracy.py's judge: a label either way
        return f"stub verdict\n{'CORRECT' if _h(prompt) % 2 else 'WRONG'}"
    if prompt.startswith("You answer a question about two people's past conversations"):  # its answer
        first = next((line for line in prompt.splitlines() if line.startswith("- [")), "")
        return first.split(": ", 1)[-1][:80] if first else "unknown"
    if '{"queries"' in system:  # deep search's rewrite (memories/search/rewrite.py)
        return rewrite_reply(prompt)
    if "<session_trace>" in prompt:
        return distill_reply(prompt)
    if prompt.startswith("You are consolidating similar memories"):
        return synthesis_reply(prompt)
    if prompt.startswith("Consolidate each of these ") and "Cluster C1 — members" in prompt:
        return synthesis_batch_reply(prompt)
    if prompt.startswith("Summarize these ") and "Memory id: " in prompt:
        return summary_reply(prompt)
    if "Pairs (OLDER → NEWER):" in prompt:
        return judge_batch_reply(prompt)
    if '"supersedes"' in system or '"supersedes"' in prompt:
        return json.dumps({"supersedes": False, "confidence": "low", "reason": None})
    if prompt.startswith("Do these two statements contradict"):
        # every 7th pair is a (confident) contradiction, so the link-writing path runs too
        contradicts = _h(prompt) % 7 == 0
        return json.dumps(
            {
                "reasoning": "bench stub",
                "contradicts": contradicts,
                "confidence": 0.9 if contradicts else 0.2,
                "explanation": "stub verdict",
            }
        )
    if "Output as JSON array of strings" in prompt:
        return json.dumps(["Project runs tests before committing"])
    return "NO_EXTRACTIONS"
