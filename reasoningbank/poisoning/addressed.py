"""Text addressed to an AI assistant rather than describing practice, in English: override phrases,
chat-role markup, a new persona or mode, secrecy towards the user, a note to "AI assistants", a request
for the reader's own prompt. (Other languages: ``languages``.)

A memory may talk about these things: how to write an LLM app's system prompt, the phrases a prompt
filter blocks, the Llama chat format. The rules therefore look for the forms that *give* the order —
the imperative with its object ("ignore all previous instructions"), the marker used as a marker — and
leave alone a phrase that is negated ("never reveal your system prompt"), quoted as an example
("phrases like 'ignore previous instructions'"), or shown as inline code (`<system>`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from reasoningbank.poisoning.catalogue import SEP, Hit, any_of, words_upto
from reasoningbank.poisoning.context import in_code_span, negated, quoted_mention

__pure__ = True  # Django-free (tests/test_import_contracts.py)

I = re.IGNORECASE  # noqa: E741 — one letter, as in the re module

_OVERRIDE_VERB = any_of(
    "ignore", "disregard", "forget", "override", "bypass", "overrule", "abandon", "set aside", "throw out",
    "pay no (?:attention|heed|mind) to", "do not (?:follow|obey)", "don'?t (?:follow|obey)",
    "stop (?:following|obeying)", "no longer (?:follow|obey)", "cease (?:following|obeying)",
)  # fmt: skip
_QUALIFIER = any_of(
    "previous", "prior", "preceding", "above", "earlier", "original", "initial", "existing", "old", "all", "any",
    "every", "your", "system", "safety", "developer", "default", "other", "those", "these", "given", "current",
)  # fmt: skip
_STRONG_QUALIFIER = any_of(
    "previous", "prior", "preceding", "above", "earlier", "original", "initial", "your", "system", "safety",
)  # fmt: skip
_STRONG_NOUN = any_of(
    r"instructions?", r"directives?", r"system ?prompts?", r"system messages?", r"prompts?", r"guidelines",
    r"guardrails?", r"programming", r"instruction set", r"polic(?:y|ies)", r"context", r"orders",
)  # fmt: skip
_WEAK_NOUN = any_of(r"rules", r"constraints", r"restrictions", r"limitations", r"commands", r"messages")

_OVERRIDE = [
    # ignore all previous instructions / disregard your system prompt / forget the above context
    re.compile(rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}{_QUALIFIER}{SEP}{words_upto(2)}{_STRONG_NOUN}\b", I),
    re.compile(rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}{_STRONG_QUALIFIER}{SEP}{words_upto(1)}{_WEAK_NOUN}\b", I),
    # stop following the instructions in your system prompt
    re.compile(
        rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}(?:{_STRONG_NOUN}|{_WEAK_NOUN}){SEP}(?:in|of|from|given in|given by)"
        rf"{SEP}(?:your|the system|the developer)\b",
        I,
    ),
    # forget everything you were told / disregard everything above
    re.compile(
        rf"\b(?:ignore|disregard|forget){SEP}(?:everything|all(?: of)?(?: that| this| the above)?|whatever)"
        rf"{SEP}(?:you(?:'ve| have| were| had)?{SEP}(?:been{SEP})?(?:told|taught|given|instructed|learned)|"
        rf"above|before(?: this)?|(?:that was )?said (?:before|above)|stated above|so far|up to (?:now|this point))\b",
        I,
    ),
    # your new instructions are / these instructions supersede all others
    re.compile(
        rf"\byour{SEP}(?:new|real|actual|true|only|updated|revised|primary){SEP}"
        rf"(?:instructions?|task|directives?|goal|objective|purpose|mission|orders?){SEP}(?:is|are|will be|now)\b",
        I,
    ),
    re.compile(
        rf"\b(?:these|this|the following|the below){SEP}(?:new{SEP})?(?:instructions?|directives?|notes?|rules?|messages?)"
        rf"{SEP}(?:supersedes?|overrides?|replaces?|takes? precedence over|take priority over|has priority over|"
        rf"outranks?){SEP}{words_upto(2)}(?:all|any|your|the system|previous|prior|other|everything)\b",
        I,
    ),
    re.compile(
        rf"\bfrom now on{SEP}(?:you{SEP}(?:will|must|shall|should|are to|are going to|can){SEP})?"
        rf"(?:act|behave|respond|answer|reply|obey|ignore|disregard|pretend|role-?play|speak|operate|"
        rf"only (?:respond|answer|follow|obey)|follow only|comply)\b",
        I,
    ),
]
_DOC_TARGET = re.compile(
    rf"{SEP}(?:in|from|of|on){SEP}(?:the{SEP}|our{SEP}|this{SEP})?(?:readme|docs?|wiki|documentation|"
    rf"setup|guide|runbook|ticket|page|section|file|chapter|confluence|notion|issue|pr|[\w./-]{{1,60}}\.(?:md|rst|txt))\b",
    I,
)

_ROLE_WORD = any_of("system", "sys", "assistant", "user", "human", "developer", "admin", "instructions?", "tool", "im_start", "im_end")
_ROLE_MARKUP = [
    re.compile(rf"</?{_ROLE_WORD}(?:\s[^<>\n]{{0,40}})?>", I),  # <system> … </system>
    re.compile(r"<\|[a-z_]{2,20}\|>|\[/?inst\]|<</?sys>>|\[/?(?:system|sys)(?:_prompt)?\]", I),
    re.compile(
        rf"(?:^|\n)#{{1,6}} ?(?:system|instruction|instructions|assistant|human|response|developer)"
        rf"(?: (?:prompt|message|note|instructions?|override))? ?:",
        I,
    ),
    re.compile(
        rf"\b(?:important|urgent|critical|mandatory|priority|new|updated){SEP}(?:system|admin|administrator)"
        rf"{SEP}(?:note|notice|message|override|instructions?|directive|update|alert|requirement|prompt)\b",
        I,
    ),
    re.compile(
        r"\[ ?(?:system|sys)(?: (?:note|notice|message|override|instructions?|prompt|alert))? ?\]|"
        r"[\[(] ?(?:system|sys|admin|developer|assistant) (?:note|notice|message|override|instructions?|prompt|alert) ?[\])]",
        I,
    ),
    re.compile(r"\b(?:system (?:note|notice|override|directive|alert|command)|(?:admin|developer) (?:override|directive)) ?[:!]", I),
    # capitals: "SYSTEM:", "ADMIN OVERRIDE:", "SYSTEM MESSAGE:" (a plain "System:" may be an environment line)
    re.compile(
        r"\b(?:SYSTEM|ADMIN|ADMINISTRATOR|DEVELOPER|ASSISTANT)(?: (?:NOTE|NOTICE|MESSAGE|OVERRIDE|INSTRUCTIONS?|"
        r"DIRECTIVE|PROMPT|ALERT|COMMAND|MODE|UPDATE))? ?:"
    ),
    # chat turns: "\n\nHuman: … \n\nAssistant:"
    re.compile(r"\b(?:human|user|system) ?: ?[^\n]{0,200}\n(?:assistant|ai) ?:", I),
]
_MARKUP_TALK = re.compile(
    r"[^\n]{0,40}?\b(?:tags?|tokens?|markers?|strings?|format|formats|delimiters?|elements?|blocks?|sections?|"
    r"headers?|wrappers?|template|syntax)\b",
    I,
)

_AI_NOUN = any_of(
    "ai", "a\\.i\\.", "llm", "language model", "large language model", "ai assistant", "ai agent", "coding agent",
    "coding assistant", "assistant", "agent", "chatbot", "bot", "model", "claude", "chatgpt", "gpt", "copilot",
    "cursor", "gemini", "codex",
)  # fmt: skip
_STRICT_AI = any_of(
    "ai", "a\\.i\\.", "llms?", "(?:large )?language models?", "ai (?:assistants?|agents?|models?|systems?|tools?)",
    "chatbots?", "automated (?:assistants?|agents?)", "models",
)
_PERSONA = [
    re.compile(
        rf"\byou(?: are|'re){SEP}(?:now|no longer|henceforth|from now on){SEP}{words_upto(3)}"
        rf"(?:{_AI_NOUN}|dan|persona|character|unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|"
        rf"free (?:of|from)|bound by|restricted|limited by|in \w+ mode|without (?:any )?(?:rules|restrictions|limits|filters))\b",
        I,
    ),
    re.compile(
        rf"\b(?:act|behave|respond|operate|role-?play|pretend|imagine)(?:{SEP}(?:as|like|that|to be))?"
        rf"(?:{SEP}(?:you are|you're|to be|as|if you were|an?)){{0,2}}{SEP}{words_upto(1)}"
        rf"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|dan\b|an ai (?:with no|without)|"
        rf"an? (?:assistant|model|ai) (?:with no|without))",
        I,
    ),
    re.compile(r"\b(?:jailbreak|jailbroken|unrestricted|unfiltered|uncensored|dan|god|evil|chaos) mode\b", I),
    re.compile(r"\bdo anything now\b", I),
]
_MODE = re.compile(r"\b(?:developer|dev|debug|admin|sudo|root|maintenance) mode\b", I)
_MODE_SWITCH = re.compile(
    r"\b(?:enabled|activated|engaged|unlocked|active|is on|now on|enter|entering|switch(?:ed)? to|turn(?:ed)? on|"
    r"activate|enable)\b",
    I,
)
_MODE_AI_CUE = re.compile(
    r"\b(?:ai|llm|language model|chatbot|assistant|restrictions|content (?:filter|polic)\w*|safety|guidelines|"
    r"no limits|without limits|censor\w*|refus\w+|jailbr\w+|unrestricted|policies)\b",
    I,
)

_TELL_VERB = any_of(
    "tell", "telling", "inform", "informing", "notify", "notifying", "alert", "alerting", "mention", "mentioning",
    "reveal", "revealing", "disclose", "disclosing", "warn", "warning", "let", "letting", "report", "reporting",
    "show", "showing", "explain", "explaining",
)  # fmt: skip
_THE_USER = any_of(
    r"(?:the|your|this)\s(?:user|human|operator|developer|requester|person)s?", r"users", r"the person you\S* (?:help|work)\w*"
)
# what follows "do not tell the user" in an order to hide something (not "a wrong ETA")
_TELL_TAIL = (
    r"(?=\s?(?:[.,;:!)\n\u2014-]|$|about|that|what|anything|any|this|these|you|of|it|how|where|when|why|unless|"
    r"until|or|and|yet|either|before|after|if|see|know|find|notice|learn|read|be))"
)
_SECRECY = [
    re.compile(
        rf"\b(?:do not|don'?t|dont|never|must not|mustn'?t|should not|shouldn'?t|without){SEP}{words_upto(1)}"
        rf"{_TELL_VERB}{SEP}{words_upto(4)}{_THE_USER}\b{_TELL_TAIL}",
        I,
    ),
    re.compile(rf"\b(?:keep|hide|conceal){SEP}{words_upto(4)}(?:secret |hidden )?from{SEP}{_THE_USER}\b", I),
    re.compile(rf"\b{_THE_USER}{SEP}(?:must|should|can|will|need)(?: not|n'?t| never){SEP}(?:know|see|find out|notice|be told|learn)\b", I),
    re.compile(rf"\bwithout{SEP}(?:the{SEP})?(?:user|human|operator)'?s?{SEP}(?:knowledge|consent|noticing|awareness|knowing)\b", I),
    re.compile(
        rf"\b(?:do not|don'?t|never){SEP}(?:mention|reveal|disclose|repeat|quote|acknowledge|show){SEP}"
        rf"(?:this|these|the){SEP}(?:note|notes|instructions?|memory|message|steps?|rule|directive)\b",
        I,
    ),
    re.compile(rf"\b(?:secretly|covertly|stealthily|surreptitiously){SEP}{words_upto(1)}(?:run|execute|install|send|upload|add|modify|insert|append|copy|post|change)\b", I),
]

_ADDRESSED = [
    re.compile(rf"\b(?:attention|note|notice|dear|hey|hello|warning)[,:]?{SEP}{_STRICT_AI}\s?[:,!]", I),
    re.compile(
        rf"\b(?:note|message|notice|attention|instructions?|reminder|warning|memo){SEP}(?:to|for){SEP}"
        rf"(?:the{SEP}|any{SEP}|all{SEP})?{_STRICT_AI}\b",
        I,
    ),
    re.compile(rf"\b(?:if|when|since) you(?: are|'re){SEP}(?:an?{SEP})?(?:ai|llm|a\.i\.|language model|large language model|ai (?:assistant|agent|model)|chatbot)\b", I),
    re.compile(
        rf"\b(?:any|all|every|dear|hey|attention|to the|hello){SEP}{_STRICT_AI}{SEP}{words_upto(1)}"
        rf"(?:reading|processing|parsing|seeing|ingesting|summari[sz]ing|retrieving|that reads?|who reads?)(?: this)?\b",
        I,
    ),
    re.compile(
        rf"\b(?:this|the following){SEP}(?:note|message|memory|text|section|entry){SEP}(?:is{SEP})?(?:meant|intended|written|addressed){SEP}"
        rf"(?:only{SEP})?(?:for|to){SEP}(?:the{SEP}|any{SEP})?{_STRICT_AI}\b",
        I,
    ),
    re.compile(
        rf"\b(?:claude|chatgpt|copilot|gemini|codex|assistant|ai|agent)[,:]{SEP}(?:ignore|forget|disregard|from now on)\b",
        I,
    ),
]

_LEAK = re.compile(
    rf"\b(?:reveal|print|output|repeat|show|display|dump|leak|disclose|share|tell me|write out|echo|recite|"
    rf"paste|send|post|copy){SEP}(?:me{SEP}|us{SEP})?(?:your|all of your|all your){SEP}{words_upto(2)}"
    rf"(?:system ?prompt|system messages?|instructions|initial prompt|hidden prompt|prompt|rules|guidelines|"
    rf"configuration|context window|pre-?prompt)\b",
    I,
)


# Substrings one of which each group needs: a cheap test (``in`` on the lower-cased text) that skips
# most groups for most texts before any pattern runs.
_ANCHORS_OVERRIDE = (
    "ignor", "disregard", "forget", "overrid", "bypass", "overrul", "abandon", "aside", "throw out", "pay no", "follow",
    "obey", "your ", "supersed", "precedence", "priority", "replace", "outrank", "from now on",
)  # fmt: skip
_ANCHORS_MARKUP = ("<", "[", "#", "system", "admin", "developer", "assistant", "human", "user")
_ANCHORS_PERSONA = ("you are", "you're", "act", "behav", "respond", "operat", "role", "pretend", "imagin", " mode", "anything now")
_ANCHORS_SECRECY = (
    "user", "human", "operator", "tell", "inform", "notif", "alert", "mention", "reveal", "disclos", "warn", "let", "report", "show", "explain", "keep",
    "hide", "conceal", "without", "secret", "covert", "stealth", "surreptitious",
)  # fmt: skip
_ANCHORS_ADDRESSED = (
    " ai", "ai ", "ai,", "ai:", "a.i", "llm", "language model", "chatbot", "claude", "chatgpt", "copilot", "gemini", "codex",
    "assistant", "agent", "model",
)  # fmt: skip


def hits(text: str) -> Iterator[Hit]:
    lowered = text.lower()
    for pattern in _OVERRIDE if any(a in lowered for a in _ANCHORS_OVERRIDE) else ():
        for match in pattern.finditer(text):
            start, end = match.span()
            if negated(text, start) or quoted_mention(text, start, end) or _DOC_TARGET.match(text, end):
                continue
            yield "override_instructions", start, end
    for pattern in _ROLE_MARKUP if any(a in lowered for a in _ANCHORS_MARKUP) else ():
        for match in pattern.finditer(text):
            start, end = match.span()
            if in_code_span(text, start, end) or _MARKUP_TALK.match(text, end):
                continue
            yield "role_markup", start, end
    if any(a in lowered for a in _ANCHORS_PERSONA):
        for pattern in _PERSONA:
            for match in pattern.finditer(text):
                if not negated(text, match.start()) and not quoted_mention(text, *match.span()):
                    yield "persona_switch", *match.span()
        for match in _MODE.finditer(text):
            start, end = match.span()
            if _MODE_SWITCH.search(text[max(0, start - 60) : end + 60]) and _MODE_AI_CUE.search(
                text[max(0, start - 200) : end + 200]
            ):
                yield "persona_switch", start, end
    for pattern in _SECRECY if any(a in lowered for a in _ANCHORS_SECRECY) else ():
        for match in pattern.finditer(text):
            if not quoted_mention(text, *match.span()):
                yield "secrecy_from_user", *match.span()
    for pattern in _ADDRESSED if any(a in lowered for a in _ANCHORS_ADDRESSED) else ():
        for match in pattern.finditer(text):
            if not quoted_mention(text, *match.span()):
                yield "addressed_to_ai", *match.span()
    for match in _LEAK.finditer(text) if "your" in lowered else ():
        if not negated(text, match.start()) and not quoted_mention(text, *match.span()):
            yield "prompt_leak", *match.span()
