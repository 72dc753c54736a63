"""Memory content as Markdown (memories/dashboard/markdown.py): what agents write renders, and nothing in
the content can become markup of its own — no script, event handler, style, image or javascript: link."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from memories.dashboard.markdown import markdown_render


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """The tags of ``html`` with their attributes, as a browser's parser sees them."""

    class Collect(HTMLParser):
        found: list[tuple[str, dict[str, str | None]]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.found.append((tag, dict(attrs)))

    parser = Collect()
    parser.found = []
    parser.feed(html)
    return parser.found


def test_backticks_lists_emphasis_and_fenced_code_render_as_html():
    html = markdown_render("Use `retry_limit=3` and **never** more:\n\n- one\n- two\n\n```\nwhile True:\n    pass\n```")
    assert "<code>retry_limit=3</code>" in html
    assert "<strong>never</strong>" in html
    assert "<li>one</li>" in html and "<li>two</li>" in html
    assert "<pre><code>while True:\n    pass\n</code></pre>" in html
    assert "`" not in html


def test_an_http_link_is_kept_and_told_not_to_pass_the_referrer():
    html = markdown_render("See [the docs](https://docs.example.com/retry).")
    assert '<a href="https://docs.example.com/retry" rel="noopener noreferrer nofollow">the docs</a>' in html


@pytest.mark.parametrize(
    "content",
    [
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        '<a href="javascript:alert(1)" onclick="alert(1)">x</a>',
        "[click me](javascript:alert(1))",
        "[click me](JaVaScRiPt:alert(1))",
        "[click me](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "![pixel](https://tracker.example.com/p.gif)",
        '<div style="position:fixed">covers the page</div>',
        "<iframe src=https://evil.example.com></iframe>",
    ],
)
def test_nothing_in_the_content_becomes_markup_that_runs_or_loads(content):
    for tag, attributes in elements(markdown_render(content)):
        assert tag in {"p", "a"}, tag
        assert set(attributes) <= {"href", "rel"}, attributes
        assert (attributes.get("href") or "https:").lower().startswith("https:"), attributes


def test_raw_html_in_the_content_is_shown_as_text():
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown_render("<script>alert(1)</script>")


def test_empty_content_renders_nothing():
    assert markdown_render("") == ""
