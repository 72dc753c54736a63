"""``{{ memory.content|markdown }}``: memory content rendered as sanitised Markdown
(memories/dashboard/markdown.py says how it stays safe)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from memories.dashboard.markdown import markdown_render

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    # safe to mark: markdown_render escapes raw HTML and nh3 keeps only its allowlists
    return mark_safe(markdown_render(text))
