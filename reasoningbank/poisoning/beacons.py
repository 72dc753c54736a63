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
from reasoningbank.poisoning.phrases import Text, phrase

__pure__ = True  # Django-free (tests/test_import_contracts.py)

URL_CHARS = 2000
_LINK_URLS = [
    # ![alt](https://…) / [text](…)
    phrase(r"!?\[[^\]\n]{0,200}+\]\(\s?<?((?:https?:)?//[^\s)>]{1,2000}+)", ("](",), reach=URL_CHARS + 300),
    # <img src="https://…">: the attributes before src do not hold "<" (each tag is read from its own "<")
    phrase(
        r"<(?:img|a|iframe|script|link|source|video|audio)\b[^<>\n]{0,300}?(?:src|href|srcset)\s?=\s?['\"]?"
        r"((?:https?:)?//[^\s'\">]{1,2000}+)",
        ("src", "href"),
        reach=URL_CHARS + 400,
    ),
    # [ref]: https://…
    phrase(r"(?:^|\n) {0,3}\[[^\]\n]{1,100}+\]:\s?<?((?:https?:)?//\S{1,2000}+)", ("]:",), reach=URL_CHARS + 200),
]
_DATA_SLOT = re.compile(
    r"\$\{[^}\s]{1,80}\}|\$\([^)]{1,200}\)|`[^`]{1,200}`|\{\{[^}]{1,80}\}\}|\$[a-z_][a-z0-9_]{2,64}|%[a-z_]{3,64}%|"
    r"<[a-z][a-z _-]{2,60}>|\[[a-z][a-z _-]{2,40}\]|(?:insert|replace|your|put|add)_[a-z_]{2,40}|"
    r"process\.env|os\.environ|\{(?:secret|token|key|password|env|conversation|chat|history|context|summary|data|"
    r"content|memory|code|repo|file|ssh|cred|session|cookie|email|prompt|message|input|answer)[a-z_ ]{0,30}\}"
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
_IMAGE_KEYS = ("image", "img", "pixel", "beacon", "badge")
_IMAGE = any_of(
    r"(?:the |a |this |that |an |each |every )?(?:image|img|markdown image|pixel|tracking pixel|beacon|badge)"
    r"(?: url| link| src| address)?",
)
_ANY_URL = any_of(
    _IMAGE,
    r"(?:the |a |this |that |an )?(?:url|link|uri|query ?string|query parameters?|url parameters?|querystring|"
    r"request url|src attribute|href)",
)
_ANY_URL_KEYS = (*_IMAGE_KEYS, "url", "link", "uri", "query", "parameter", "src", "href")
_INTO = rf"{SEP}{words_upto(6)}(?:to|in|into|as|inside|within|onto){SEP}{words_upto(2)}"
_PUT = (
    r"\b(?:append|add|attach|include|put|insert|encode|embed|place|substitute|replace|fill|inject|stuff|smuggle|"
    r"pass|concatenate)"
)
_ANSWERS = r"(?:every|each|all|your)(?: \w{1,24})? (?:answers?|repl(?:y|ies)|responses?|messages?|outputs?|turns?)"
_URL_INSTRUCTIONS = [
    # append the conversation to the URL / encode your API key into the image link
    phrase(rf"{_PUT}{SEP}{words_upto(3)}{_CONVERSATION_DATA}{_INTO}{_ANY_URL}\b", _ANY_URL_KEYS),
    phrase(rf"{_PUT}{SEP}{words_upto(2)}{_SECRET_DATA}{_INTO}{_IMAGE}\b", _IMAGE_KEYS),
    # render / show this image in every answer
    phrase(
        rf"\b(?:render|show|display|output|include|add|append|embed|insert|print|end|start|begin){SEP}{words_upto(4)}"
        rf"(?:image|img|pixel|markdown image|badge|link)s?{SEP}{words_upto(5)}"
        rf"(?:in|to|at the (?:end|start|top|bottom) of|with){SEP}{_ANSWERS}\b",
        ("image", "img", "pixel", "badge", "link"),
    ),
    phrase(
        rf"\b(?:end|start|begin|finish|conclude){SEP}{_ANSWERS}{SEP}{words_upto(4)}"
        rf"(?:with|by (?:rendering|adding|including|showing))?{SEP}{words_upto(3)}(?:this |the following |an? )?"
        rf"(?:image|markdown image|pixel|link|!\[)",
        ("image", "pixel", "link", "!["),
    ),
]


def hits(scan: Text) -> Iterator[Hit]:
    for pattern in _LINK_URLS:
        for match in pattern.finditer(scan, "url_beacon"):
            if _DATA_SLOT.search(scan.lower, *match.span(1)):
                yield scan.hit("url_beacon", *match.span())
    text = scan.text
    for pattern in _URL_INSTRUCTIONS:
        for match in pattern.finditer(scan, "url_beacon"):
            start, end = match.span()
            if not negated(text, start) and not quoted_mention(text, start, end):
                yield scan.hit("url_beacon", start, end)
