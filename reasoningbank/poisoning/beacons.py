"""Beacons: a URL that carries data away when it is rendered or followed. An agent (or the chat client
that shows its answer) fetches a Markdown image by itself; a link is one click. Put a slot in its URL —
``${AWS_SECRET_ACCESS_KEY}``, ``$(cat ~/.ssh/id_rsa)``, ``{{conversation}}``, ``<summary of the chat>``
— and whoever fills the slot sends the data to the URL's host.

Flagged: a Markdown image or link, an HTML ``<img>``/``<a>`` or a Markdown reference definition whose
URL holds such a slot; an instruction to put secrets or the conversation into a URL or image; an
instruction to add an image or link to every answer. Not flagged: an ordinary URL with a query string
(``?page=2&sort=desc``), an API path template in prose (``GET /users/{id}``), a badge image."""

from __future__ import annotations

import re
from collections.abc import Iterator

from reasoningbank.poisoning.catalogue import SEP, Hit, any_of, words_upto
from reasoningbank.poisoning.context import negated, quoted_mention

__pure__ = True  # Django-free (tests/test_import_contracts.py)

I = re.IGNORECASE  # noqa: E741

_LINK_URLS = [
    re.compile(r"!?\[[^\]\n]{0,200}\]\(\s?<?((?:https?:)?//[^\s)>]{1,2000})", I),  # ![alt](https://…) / [text](…)
    re.compile(r"<(?:img|a|iframe|script|link|source|video|audio)\b[^>\n]{0,300}?(?:src|href|srcset)\s?=\s?['\"]?((?:https?:)?//[^\s'\">]{1,2000})", I),
    re.compile(r"(?:^|\n) {0,3}\[[^\]\n]{1,100}\]:\s?<?((?:https?:)?//\S{1,2000})", I),  # [ref]: https://…
]
_DATA_SLOT = re.compile(
    r"\$\{[^}\s]{1,80}\}|\$\([^)]{1,200}\)|`[^`]{1,200}`|\{\{[^}]{1,80}\}\}|\$[A-Z_][A-Z0-9_]{2,}|%[A-Z_]{3,}%|"
    r"<[A-Za-z][A-Za-z _-]{2,60}>|\[[A-Z][A-Z _-]{2,40}\]|(?:INSERT|REPLACE|YOUR|PUT|ADD)_[A-Z_]{2,40}|"
    r"process\.env|os\.environ|\{(?:secret|token|key|password|env|conversation|chat|history|context|summary|data|"
    r"content|memory|code|repo|file|ssh|cred|session|cookie|email|prompt|message|input|answer)[a-z_ ]{0,30}\}",
    I,
)
_SECRET_DATA = any_of(
    r"(?:the |your |all |my |our )?(?:api ?keys?|tokens?|secrets?|passwords?|credentials)",
    r"(?:it|them|this data|that data|the data|the result|the output|the answer)",
)
_CONVERSATION_DATA = any_of(
    r"(?:the |your |all )?env(?:ironment)? (?:variables|vars)",
    r"(?:the |this |our |a |your )?(?:conversation|chat(?: history| log)?|discussion|dialog(?:ue)?|transcript)",
    r"(?:the |a )?summary of",
    r"(?:the |all |any )?(?:previous|earlier|prior) (?:messages|turns|answers|replies)",
    r"(?:the |your )?(?:user'?s?|developer'?s?) (?:messages?|input|data|emails?|questions?|name|code|files?)",
    r"(?:the |your )?(?:system prompt|context window|memories|instructions)",
    r"(?:the )?(?:contents?|content) of",
    r"(?:the )?(?:repo(?:sitory)?|project) (?:name|contents|secrets)",
    r"(?:the |any |your )?(?:private|ssh) keys?",
)  # fmt: skip
_IMAGE = any_of(
    r"(?:the |a |this |that |an |each |every )?(?:image|img|markdown image|pixel|tracking pixel|beacon|badge)(?: url| link| src| address)?",
)
_ANY_URL = any_of(
    _IMAGE,
    r"(?:the |a |this |that |an )?(?:url|link|uri|query ?string|query parameters?|url parameters?|querystring|request url|src attribute|href)",
)
_INTO = rf"{SEP}{words_upto(6)}(?:to|in|into|as|inside|within|onto){SEP}{words_upto(2)}"
_PUT = (
    r"\b(?:append|add|attach|include|put|insert|encode|embed|place|substitute|replace|fill|inject|stuff|smuggle|"
    r"pass|concatenate)"
)
_URL_INSTRUCTIONS = [
    # append the conversation to the URL / encode your API key into the image link
    re.compile(rf"{_PUT}{SEP}{words_upto(3)}{_CONVERSATION_DATA}{_INTO}{_ANY_URL}\b", I),
    re.compile(rf"{_PUT}{SEP}{words_upto(2)}{_SECRET_DATA}{_INTO}{_IMAGE}\b", I),
    # render / show this image in every answer
    re.compile(
        rf"\b(?:render|show|display|output|include|add|append|embed|insert|print|end|start|begin){SEP}{words_upto(4)}"
        rf"(?:image|img|pixel|markdown image|badge|link)s?{SEP}{words_upto(5)}(?:in|to|at the (?:end|start|top|bottom) of|with)"
        rf"{SEP}(?:every|each|all|your)(?: \w+)? (?:answers?|repl(?:y|ies)|responses?|messages?|outputs?|turns?)\b",
        I,
    ),
    re.compile(
        rf"\b(?:end|start|begin|finish|conclude){SEP}(?:every|each|all|your)(?: \w+)? (?:answers?|repl(?:y|ies)|responses?|messages?)"
        rf"{SEP}{words_upto(4)}(?:with|by (?:rendering|adding|including|showing))?{SEP}{words_upto(3)}(?:this |the following |an? )?"
        rf"(?:image|markdown image|pixel|link|!\[)",
        I,
    ),
]


_ANCHORS_INSTRUCTIONS = ("url", "link", "uri", "query", "image", "img", "pixel", "beacon", "badge", "href", "src", "![")


def hits(text: str) -> Iterator[Hit]:
    lowered = text.lower()
    for pattern in _LINK_URLS if "//" in text else ():
        for match in pattern.finditer(text):
            url = match.group(1)
            if _DATA_SLOT.search(url):
                yield "url_beacon", *match.span()
    for pattern in _URL_INSTRUCTIONS if any(a in lowered for a in _ANCHORS_INSTRUCTIONS) else ():
        for match in pattern.finditer(text):
            start, end = match.span()
            if not negated(text, start) and not quoted_mention(text, start, end):
                yield "url_beacon", start, end
