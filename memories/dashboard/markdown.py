"""Memory content as HTML for the dashboard: Markdown (agents write backticks, lists and links) parsed by
markdown-it-py, then sanitised by nh3 (docs/decisions.md). Pure (no Django).

Two locks, so that one mistake is not enough: the parser runs with raw HTML off (a ``<script>`` in the
content is text, escaped), and nh3 keeps only the tags, attributes and link schemes on the allowlists
below, so even a parser bug or a future option cannot put a script, an event handler, a style or a
``javascript:`` link on the page."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# CommonMark plus tables and strikethrough; "html": False escapes raw HTML instead of passing it through
_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
# what CommonMark produces for text, code, lists, quotes, tables and links; no images (a remote image
# would call out to another site on every view of the page), no style, no forms
ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}


def markdown_render(text: str) -> str:
    """Safe HTML for ``text`` read as Markdown; links open nothing but http(s) and mail, and carry
    ``rel="noopener noreferrer nofollow"`` (the content is written by agents, not by the viewer)."""
    html = _PARSER.render(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
