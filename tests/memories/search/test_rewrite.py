"""Deep search's question rewrite, the pure part (memories/search/rewrite.py): the fixed prompt, the
parser of the LLM's reply, the cache key and the fusion of several queries' rankings."""

from __future__ import annotations

import pytest

from memories.search.ranking import ScoreBreakdown
from memories.search.rewrite import (
    REWRITE_MAX_QUERIES,
    REWRITE_SYSTEM_PROMPT,
    RewriteParseError,
    breakdown_relevance_set,
    rankings_fuse,
    rewrite_cache_key,
    rewrite_parse,
    rewrite_prompt,
)

QUESTION = "Where did Melanie go after her sister's wedding?"


def test_the_system_prompt_is_the_fixed_text_that_was_measured():
    # reworded, the prompt must be measured again (bench/retrieval.py --deep-llm-base-url)
    assert REWRITE_SYSTEM_PROMPT.startswith("You turn a question into search queries for a memory bank")
    assert "keep names, places, dates and other key entities exactly as written" in REWRITE_SYSTEM_PROMPT
    assert REWRITE_SYSTEM_PROMPT.endswith('Reply with JSON only: {"queries": ["...", "..."]}\n')


def test_the_prompt_carries_the_question():
    assert rewrite_prompt(f"  {QUESTION}\n") == f"Question: {QUESTION}\n\nReply with the JSON object only."


@pytest.mark.parametrize(
    "reply",
    [
        '{"queries": ["Melanie sister wedding", "Melanie went to"]}',
        '```json\n{"queries": ["Melanie sister wedding", "Melanie went to"]}\n```',
        'Sure! Here are the queries:\n{"queries": ["Melanie sister wedding", "Melanie went to"]}\nGood luck.',
        '["Melanie sister wedding", "Melanie went to"]',
    ],
)
def test_the_queries_are_read_from_the_json_as_models_send_it(reply):
    assert rewrite_parse(reply, QUESTION) == ["Melanie sister wedding", "Melanie went to"]


def test_blanks_repeats_the_question_itself_and_non_strings_are_dropped_and_spaces_collapsed():
    reply = (
        '{"queries": ["  Melanie   sister wedding ", "", 7, "melanie sister wedding", '
        '"where did Melanie go after her sister\'s wedding", "Melanie\\u0000 trip"]}'
    )
    assert rewrite_parse(reply, QUESTION) == ["Melanie sister wedding", "Melanie trip"]


def test_at_most_the_maximum_of_queries_is_kept_and_each_is_cut():
    reply = '{"queries": ["a1", "b2", "c3", "d4", "%s"]}' % ("x" * 500)
    assert rewrite_parse(reply, QUESTION) == ["a1", "b2", "c3"][:REWRITE_MAX_QUERIES]
    assert len(rewrite_parse('["%s"]' % ("x" * 500), QUESTION)[0]) == 300


def test_an_empty_list_is_a_valid_answer_the_question_is_focused_already():
    assert rewrite_parse('{"queries": []}', QUESTION) == []


@pytest.mark.parametrize(
    "reply", ["Melanie went to Paris.", '{"answer": "Paris"}', '{"queries": "Paris"}', "{not json"]
)
def test_a_reply_without_a_list_of_queries_is_an_error(reply):
    with pytest.raises(RewriteParseError):
        rewrite_parse(reply, QUESTION)


def test_the_cache_key_is_per_organization_and_model_and_holds_no_text_of_the_question():
    key = rewrite_cache_key(7, QUESTION, provider="openai", model="gpt-4o-mini")
    assert key.startswith("search:rewrite:7:") and "Melanie" not in key
    assert key == rewrite_cache_key(7, f"  {QUESTION.upper()} ", provider="openai", model="gpt-4o-mini")
    assert key != rewrite_cache_key(8, QUESTION, provider="openai", model="gpt-4o-mini")
    assert key != rewrite_cache_key(7, QUESTION, provider="openai", model="gpt-4.1")
    assert key != rewrite_cache_key(
        7, "Where did Melanie go before the wedding?", provider="openai", model="gpt-4o-mini"
    )


def test_max_fusion_keeps_each_candidates_best_relevance_and_the_query_that_gave_it():
    question = [("a", 1.0), ("b", 0.4)]
    first_fact = [("c", 1.0), ("b", 0.9)]
    fused = {c.key: c for c in rankings_fuse([question, first_fact], fusion="max")}
    assert fused["a"].relevance == pytest.approx(1.0) and (fused["a"].query, fused["a"].found_by) == (0, (0,))
    assert fused["b"].relevance == pytest.approx(0.9) and (fused["b"].query, fused["b"].found_by) == (1, (0, 1))
    assert fused["c"].relevance == pytest.approx(1.0) and (fused["c"].query, fused["c"].found_by) == (1, (1,))


def test_a_tie_keeps_the_earlier_query_the_question_first():
    (fused,) = rankings_fuse([[("a", 0.5)], [("a", 0.5)]], fusion="max")
    assert (fused.query, fused.found_by) == (0, (0, 1))


def test_rrf_fusion_raises_what_several_queries_find_and_is_1_for_first_everywhere():
    rankings = [[("a", 0.9), ("b", 0.8)], [("b", 1.0), ("c", 0.2)]]
    fused = {c.key: c for c in rankings_fuse(rankings, fusion="rrf")}
    assert fused["b"].relevance > fused["a"].relevance > fused["c"].relevance
    assert fused["b"].query == 1  # ranked first there, second in the question's
    (alone,) = rankings_fuse([[("a", 0.3)], [("a", 0.7)]], fusion="rrf")
    assert alone.relevance == pytest.approx(1.0)


def test_below_weight_1_a_broad_querys_best_candidates_cannot_outrank_the_questions_own():
    question = [("answer", 1.0), ("near", 0.6)]
    broad = [("anything", 1.0), ("near", 1.0)]
    fused = {c.key: c for c in rankings_fuse([question, broad], fusion="max", weight=0.5)}
    assert fused["answer"].relevance == pytest.approx(1.0)
    assert fused["anything"].relevance == pytest.approx(0.5) and fused["anything"].query == 1
    assert fused["near"].relevance == pytest.approx(0.6) and fused["near"].query == 0  # the question's 0.6 beats 0.5


def test_rrf_weighs_the_llms_queries_and_stays_at_most_1():
    rankings = [[("a", 1.0)], [("b", 1.0)]]
    fused = {c.key: c for c in rankings_fuse(rankings, fusion="rrf", weight=0.5)}
    assert fused["a"].relevance == pytest.approx(1 / 1.5) and fused["b"].relevance == pytest.approx(0.5 / 1.5)
    (both,) = rankings_fuse([[("a", 0.2)], [("a", 0.9)]], fusion="rrf", weight=0.5)
    assert both.relevance == pytest.approx(1.0)


def test_a_weight_outside_0_to_1_is_refused():
    with pytest.raises(ValueError, match="weight"):
        rankings_fuse([[("a", 1.0)]], weight=1.5)


def test_an_unknown_fusion_is_refused():
    with pytest.raises(ValueError, match="unknown fusion"):
        rankings_fuse([[("a", 1.0)]], fusion="sum")


def test_a_new_relevance_makes_the_score_with_every_other_factor_unchanged():
    breakdown = ScoreBreakdown(
        relevance=1.0,
        similarity=0.5,
        lexical=2.0,
        vector_rank=1,
        lexical_rank=1,
        confidence=0.8,
        recency_boost=1.1,
        scope="team",
        scope_weight=0.9,
        consolidated_boost=1.2,
        score=0.9504,
    )
    changed = breakdown_relevance_set(breakdown, 0.5)
    assert changed.relevance == pytest.approx(0.5)
    assert changed.score == pytest.approx(0.5 * 0.8 * 1.1 * 0.9 * 1.2)
    assert (changed.similarity, changed.lexical, changed.confidence) == (0.5, 2.0, 0.8)
    assert breakdown_relevance_set(breakdown, 1.7).relevance == pytest.approx(1.0)
