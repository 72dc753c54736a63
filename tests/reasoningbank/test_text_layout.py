"""``{{ value|breakable }}`` (reasoningbank/templatetags/text_layout.py): only the runs without spaces longer
than a word go in a ``.wrap-any`` span, escaped like any value; the words around them are left as they are."""

from __future__ import annotations

from django.template import Context, Template

from reasoningbank.templatetags.text_layout import BREAKABLE_CHARS


def rendered(value: object, autoescape: str = "on") -> str:
    template = "{% load text_layout %}{% autoescape " + autoescape + " %}{{ value|breakable }}{% endautoescape %}"
    return Template(template).render(Context({"value": value}))


def test_a_long_run_goes_in_a_span_that_may_break_and_the_words_stay_as_they_are():
    token = "Supercalifragilisticexpialidocious" * 2
    assert rendered(f"Team {token} west") == f'Team <span class="wrap-any">{token}</span> west'


def test_a_word_as_long_as_the_limit_is_left_alone():
    word = "x" * BREAKABLE_CHARS
    assert rendered(f"{word} and more") == f"{word} and more"
    assert rendered(word + "y") == f'<span class="wrap-any">{word}y</span>'


def test_the_value_is_escaped_inside_and_outside_the_span():
    value = "<b>bold</b> " + "&" * 30
    assert rendered(value) == '&lt;b&gt;bold&lt;/b&gt; <span class="wrap-any">' + "&amp;" * 30 + "</span>"


def test_without_autoescape_the_text_is_kept_as_given():
    assert rendered("<i>a</i>", autoescape="off") == "<i>a</i>"
