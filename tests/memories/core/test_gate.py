"""The write gate's rules (docs/memory-model.md#how-a-memory-enters-the-bank), pure: what carries no
reusable value is refused with the field and the reason; near copies that differ in a number, a negation
or an opposite word are not copies. No database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.core.gate import (
    EMPTY,
    PLACEHOLDER,
    REPEATED,
    RESTATED_PROMPT,
    RESTATES_TITLE,
    TOO_SHORT,
    gate_check,
    is_placeholder,
    is_repetition,
    substantive_differences,
)
from memories.sessions.prompts import EXTRACTION_TEMPLATE

GOOD = {
    "title": "Pin flaky test seeds",
    "description": "When a test fails only sometimes",
    "content": "Seed the random generator in the test setup so failures reproduce.",
}
PATTERN_PROMPT = (
    "Analyze these episodic memories and extract recurring patterns or facts:",
    'Example: ["User prefers to run tests before committing", "Project uses PostgreSQL"]',
)


def check(min_content_chars: int = 20, prompts: tuple[str, ...] = (), title_is_content: bool = False, **fields):
    return gate_check(
        **{**GOOD, **fields}, min_content_chars=min_content_chars, prompts=prompts, title_is_content=title_is_content
    )


def test_a_real_lesson_passes():
    assert check() is None


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"title": "TODO"}, "title", PLACEHOLDER),
        ({"title": "N/A"}, "title", PLACEHOLDER),
        ({"description": "tbd"}, "description", PLACEHOLDER),
        ({"description": "<when to use/avoid this, max 200 chars>"}, "description", PLACEHOLDER),
        ({"content": "Lorem ipsum dolor sit amet, consectetur adipiscing elit."}, "content", PLACEHOLDER),
        ({"content": "<insert the steps here> then run the tests again"}, "content", PLACEHOLDER),
        ({"content": "{{content}}"}, "content", PLACEHOLDER),
        ({"content": "NO_EXTRACTIONS"}, "content", PLACEHOLDER),
        ({"title": "..."}, "title", EMPTY),
        ({"content": "[REDACTED:github_token] [REDACTED:aws_access_key_id]"}, "content", EMPTY),
        ({"content": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "content", REPEATED),
        ({"content": "ok ok ok ok ok ok ok ok ok ok"}, "content", REPEATED),
        ({"title": "!!!!!!!!"}, "title", EMPTY),
        ({"content": "Seed the RNG."}, "content", TOO_SHORT),
        ({"content": "Pin flaky test seeds."}, "content", RESTATES_TITLE),
        ({"content": "pin  FLAKY seeds; pin test seeds"}, "content", RESTATES_TITLE),
    ],
)
def test_junk_is_refused_naming_the_field_and_the_reason(fields, field, reason):
    rejection = check(**fields)
    assert rejection is not None
    assert (rejection.field, rejection.reason) == (field, reason)
    assert rejection.message.startswith(field) or reason == RESTATED_PROMPT


def test_the_minimum_length_is_counted_without_secrets_and_is_a_setting():
    secret = "Run: export GH_TOKEN=[REDACTED:github_token]"
    assert check(content=secret) is None  # 21 visible characters
    assert check(content=secret, min_content_chars=30).reason == TOO_SHORT
    assert "at least 30" in check(content=secret, min_content_chars=30).message
    assert check(content="Seed it.", min_content_chars=0) is None


def test_the_distillation_template_echoed_back_is_a_restated_prompt():
    echoed = (
        "For SUCCESSFUL outcomes, extract strategies that worked: what approach led to success? "
        "What patterns can be reused? What context made this work?"
    )
    rejection = check(content=echoed)
    assert (rejection.field, rejection.reason) == ("content", RESTATED_PROMPT)
    assert check(content=EXTRACTION_TEMPLATE[:2000]).reason in (RESTATED_PROMPT, PLACEHOLDER)


def test_a_pattern_that_echoes_the_prompts_example_is_refused_but_a_real_one_passes():
    example = "Project uses PostgreSQL"
    fields = {"title": example, "description": "Pattern extracted from 4 episodic memories", "content": example}
    assert check(prompts=PATTERN_PROMPT, title_is_content=True, **fields).reason == RESTATED_PROMPT
    real = "Deploys happen on Tuesdays after the standup"
    fields = {**fields, "title": real, "content": real}
    assert check(prompts=PATTERN_PROMPT, title_is_content=True, **fields) is None
    assert check(prompts=PATTERN_PROMPT, **fields).reason == RESTATES_TITLE  # only patterns may


def test_a_lesson_that_mentions_a_few_words_of_a_prompt_is_not_a_restated_prompt():
    assert check(content="Run tests before committing: the pre-commit hook runs pytest -x on changed files.") is None


@pytest.mark.parametrize("text", ["C++", "Go", "K8s", "Use RAII for every resource", "aab"])
def test_short_real_words_are_not_repetitions(text):
    assert not is_repetition(text)


@pytest.mark.parametrize("text", ["Testing strategy", "Example of a retry", "Use <div> for the layout"])
def test_ordinary_words_and_markup_are_not_placeholders(text):
    assert not is_placeholder(text)


@pytest.mark.parametrize(
    "content",
    [
        "Configure the CLI: put token = <your-token-here> in ~/.config/acme.toml, then run acme login; the CLI "
        "refuses the file when it is world-readable.",
        "Set API_KEY=<your-api-key> and API_SECRET=<your-api-secret> in .env, then run make deploy from the repo root.",
        "In the PR template, replace [insert ticket id] with the Jira key before merging, or the check fails.",
        "Seed the fixtures with lorem ipsum text from faker so the layout tests see long paragraphs.",
    ],
)
def test_a_placeholder_quoted_inside_real_knowledge_passes_the_gate(content):
    assert not is_placeholder(content)
    assert check(content=content) is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"content": "token = <your-token-here>"}, "content"),
        ({"content": "Steps: <insert steps>. Reason: <insert the reason>."}, "content"),
        ({"content": "[your description here] and then [insert the steps]"}, "content"),
        ({"description": "<your description here>, when needed"}, "description"),
        ({"content": "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."}, "content"),
        ({"content": "NO_EXTRACTIONS: nothing reusable was found in this trace at all."}, "content"),
    ],
)
def test_a_field_made_mostly_of_placeholders_is_still_a_template(fields, field):
    rejection = check(**fields)
    assert rejection is not None and (rejection.field, rejection.reason) == (field, PLACEHOLDER)


# --- near copies: where two very similar texts may still disagree ------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("Always retry failed payment webhooks", "Never retry failed payment webhooks", "negation"),
        ("Set the timeout to 5 seconds", "Set the timeout to 60 seconds", "numbers"),
        ("Pin Node to 18", "Pin Node to 20", "numbers"),
        ("Enable CSRF protection on webhook views", "Disable CSRF protection on webhook views", "opposite"),
        ("Run migrations before deploying", "Run migrations after deploying", "opposite"),
        ("Cache tax rates", "Do not cache tax rates", "negation"),
        ("Mock the clock", "Don’t mock the clock", "negation"),
    ],
)
def test_a_number_a_negation_or_an_opposite_word_makes_two_texts_differ(a, b, kind):
    found = substantive_differences(a, b)
    assert any(item.startswith(kind) for item in found), found


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Seed the random generator in test setup", "Seed the random generator in the test setup."),
        ("Set HTTP client timeouts", "Set timeouts on HTTP clients"),
        ("Retry 3 times with backoff", "Retry with backoff, 3 times"),
    ],
)
def test_a_rewording_is_no_substantive_difference(a, b):
    assert substantive_differences(a, b) == ()


words = st.sampled_from(
    ["retry", "cache", "the", "webhooks", "tests", "deploy", "timeouts", "client", "seed", "logs", "use", "set"]
)
sentences = st.lists(words, min_size=1, max_size=12).map(" ".join)


@given(sentences, sentences)
def test_differences_are_symmetric(a, b):
    def kinds(x: str, y: str) -> list[str]:
        return [item.split(":")[0] for item in substantive_differences(x, y)]

    assert kinds(a, b) == kinds(b, a)


@given(sentences)
def test_a_text_never_differs_from_itself(a):
    assert substantive_differences(a, a) == ()


@given(sentences, st.integers(0, 999), st.integers(0, 999))
def test_two_different_numbers_always_differ(a, x, y):
    if x != y:
        assert substantive_differences(f"{a} {x}", f"{a} {y}")


@given(sentences, st.sampled_from(["not", "never", "no", "don't", "avoid"]))
def test_adding_a_negation_always_differs(a, negation):
    assert substantive_differences(a, f"{negation} {a}")


@given(st.text(min_size=0, max_size=200))
def test_the_gate_never_raises_on_any_text(text):
    for field in ("title", "description", "content"):
        rejection = check(**{field: text})
        assert rejection is None or rejection.field in ("title", "description", "content")


@given(st.sampled_from("abcxyz.-!?0"), st.integers(3, 200))
def test_one_character_repeated_is_always_junk(char, n):
    rejection = check(content=char * n)
    assert rejection is not None and rejection.reason in (EMPTY, REPEATED, PLACEHOLDER)  # "xxx", "..."
