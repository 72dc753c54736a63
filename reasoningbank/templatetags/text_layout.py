"""``{{ value|breakable }}``: a text for a table cell, its long unbroken runs made breakable.

A cell's words stay whole (``td { overflow-wrap:break-word }`` in static/css/app.css), so a table never
squeezes a column into "Consolida-tion". A run without spaces longer than ``BREAKABLE_CHARS`` — a URL, an id,
a name someone typed without spaces — is not a word: it goes in a ``<span class="wrap-any">``, which may
break anywhere and adds nothing to the column's narrowest width. Without it, one such run widened its column
to the run's whole length and pushed the table's last columns out of sight (tests/browser/test_page_layout.py).
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# longer than any word worth keeping whole ("internationalization" is 20); the layout test's token length
BREAKABLE_CHARS = 24
_RUN = re.compile(rf"(\S{{{BREAKABLE_CHARS + 1},}})")


@register.filter(needs_autoescape=True)
def breakable(value: object, autoescape: bool = True) -> SafeString:
    escape = conditional_escape if autoescape else str
    parts = _RUN.split(str(value))
    # split() with a group: the runs are at the odd positions
    return mark_safe(
        "".join(
            f'<span class="wrap-any">{escape(part)}</span>' if i % 2 else str(escape(part))
            for i, part in enumerate(parts)
        )
    )
