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
from reasoningbank.poisoning.context import Marks, in_code_span, negated, quoted_mention
from reasoningbank.poisoning.phrases import Text, phrase

__pure__ = True  # Django-free (tests/test_import_contracts.py)

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
# Keys (phrases): literal parts every match holds, the rarest part of each phrase
_STRONG_NOUN_KEYS = (
    "instruction", "directive", "prompt", "message", "guideline", "guardrail", "programming", "polic", "context",
    "orders",
)  # fmt: skip
_WEAK_NOUN_KEYS = ("rules", "constraints", "restrictions", "limitations", "commands", "messages")

_OVERRIDE = [
    # ignore all previous instructions / disregard your system prompt / forget the above context
    phrase(
        rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}{_QUALIFIER}{SEP}{words_upto(2)}{_STRONG_NOUN}\b", _STRONG_NOUN_KEYS
    ),
    phrase(
        rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}{_STRONG_QUALIFIER}{SEP}{words_upto(1)}{_WEAK_NOUN}\b", _WEAK_NOUN_KEYS
    ),
    # stop following the instructions in your system prompt
    phrase(
        rf"\b{_OVERRIDE_VERB}{SEP}{words_upto(2)}(?:{_STRONG_NOUN}|{_WEAK_NOUN}){SEP}(?:in|of|from|given in|given by)"
        rf"{SEP}(?:your|the system|the developer)\b",
        _STRONG_NOUN_KEYS + _WEAK_NOUN_KEYS,
    ),
    # forget everything you were told / disregard everything above
    phrase(
        rf"\b(?:ignore|disregard|forget){SEP}(?:everything|all(?: of)?(?: that| this| the above)?|whatever)"
        rf"{SEP}(?:you(?:'ve| have| were| had)?{SEP}(?:been{SEP})?(?:told|taught|given|instructed|learned)|"
        rf"above|before(?: this)?|(?:that was )?said (?:before|above)|stated above|so far|up to (?:now|this point))\b",
        ("ignore", "disregard", "forget"),
    ),
    # your new instructions are / these instructions supersede all others
    phrase(
        rf"\byour{SEP}(?:new|real|actual|true|only|updated|revised|primary){SEP}"
        rf"(?:instructions?|task|directives?|goal|objective|purpose|mission|orders?){SEP}(?:is|are|will be|now)\b",
        ("your",),
    ),
    phrase(
        rf"\b(?:these|this|the following|the below){SEP}(?:new{SEP})?"
        rf"(?:instructions?|directives?|notes?|rules?|messages?){SEP}"
        rf"(?:supersedes?|overrides?|replaces?|takes? precedence over|take priority over|has priority over|"
        rf"outranks?){SEP}{words_upto(2)}(?:all|any|your|the system|previous|prior|other|everything)\b",
        ("supersede", "override", "replace", "precedence", "priority", "outrank"),
    ),
    phrase(
        rf"\bfrom now on{SEP}(?:you{SEP}(?:will|must|shall|should|are to|are going to|can){SEP})?"
        rf"(?:act|behave|respond|answer|reply|obey|ignore|disregard|pretend|role-?play|speak|operate|"
        rf"only (?:respond|answer|follow|obey)|follow only|comply)\b",
        ("from now on",),
    ),
]
# "ignore the previous instructions in docs/setup.md": a pointer to a document, not an order to the reader
_DOC_TARGET = re.compile(
    rf"{SEP}(?:in|from|of|on){SEP}(?:the{SEP}|our{SEP}|this{SEP})?(?:readme|docs?|wiki|documentation|"
    rf"setup|guide|runbook|ticket|page|section|file|chapter|confluence|notion|issue|pr|"
    rf"[\w./-]{{1,60}}\.(?:md|rst|txt))\b"
)

_ROLE_WORD = any_of(
    "system", "sys", "assistant", "user", "human", "developer", "admin", "instructions?", "tool", "im_start", "im_end"
)
_ROLE_MARKUP = [
    phrase(rf"</?{_ROLE_WORD}(?:\s[^<>\n]{{0,40}})?>", ("<",)),  # <system> … </system>
    phrase(r"<\|[a-z_]{2,20}\|>|\[/?inst\]|<</?sys>>|\[/?(?:system|sys)(?:_prompt)?\]", ("<|", "inst]", "<<", "sys")),
    phrase(
        r"(?:^|\n)#{1,6} ?(?:system|instruction|instructions|assistant|human|response|developer)"
        r"(?: (?:prompt|message|note|instructions?|override))? ?:",
        ("#",),
    ),
    phrase(
        rf"\b(?:important|urgent|critical|mandatory|priority|new|updated){SEP}(?:system|admin|administrator)"
        rf"{SEP}(?:note|notice|message|override|instructions?|directive|update|alert|requirement|prompt)\b",
        ("system", "admin"),
    ),
    phrase(
        r"\[ ?(?:system|sys)(?: (?:note|notice|message|override|instructions?|prompt|alert))? ?\]|"
        r"[\[(] ?(?:system|sys|admin|developer|assistant) "
        r"(?:note|notice|message|override|instructions?|prompt|alert) ?[\])]",
        ("sys", "admin", "developer", "assistant"),
    ),
    phrase(
        r"\b(?:system (?:note|notice|override|directive|alert|command)|"
        r"(?:admin|developer) (?:override|directive)) ?[:!]",
        ("system", "admin", "developer"),
    ),
    # capitals: "SYSTEM:", "ADMIN OVERRIDE:", "SYSTEM MESSAGE:" (a plain "System:" may be an environment line)
    phrase(
        r"\b(?:SYSTEM|ADMIN|ADMINISTRATOR|DEVELOPER|ASSISTANT)(?: (?:NOTE|NOTICE|MESSAGE|OVERRIDE|INSTRUCTIONS?|"
        r"DIRECTIVE|PROMPT|ALERT|COMMAND|MODE|UPDATE))? ?:",
        ("system", "admin", "developer", "assistant"),
        cased=True,
    ),
    # chat turns: "\n\nHuman: … \n\nAssistant:"
    phrase(r"\b(?:human|user|system) ?: ?[^\n]{0,200}\n(?:assistant|ai) ?:", ("\nassistant", "\nai")),
]
# "<system> tags", "the [INST] format": markup talked about, not used
_MARKUP_TALK = re.compile(
    r"\b(?:tags?|tokens?|markers?|strings?|format|formats|delimiters?|elements?|blocks?|sections?|headers?|"
    r"wrappers?|template|syntax)\b"
)
MARKUP_TALK_WINDOW = 40

_AI_NOUN = any_of(
    "ai", "a\\.i\\.", "llm", "language model", "large language model", "ai assistant", "ai agent", "coding agent",
    "coding assistant", "assistant", "agent", "chatbot", "bot", "model", "claude", "chatgpt", "gpt", "copilot",
    "cursor", "gemini", "codex",
)  # fmt: skip
_STRICT_AI = any_of(
    "ai", "a\\.i\\.", "llms?", "(?:large )?language models?", "ai (?:assistants?|agents?|models?|systems?|tools?)",
    "chatbots?", "automated (?:assistants?|agents?)", "models",
)  # fmt: skip
_PERSONA = [
    phrase(
        rf"\byou(?: are|'re){SEP}(?:now|no longer|henceforth|from now on){SEP}{words_upto(3)}"
        rf"(?:{_AI_NOUN}|dan|persona|character|unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|"
        rf"free (?:of|from)|bound by|restricted|limited by|in \w{{1,24}} mode|"
        rf"without (?:any )?(?:rules|restrictions|limits|filters))\b",
        ("you are", "you're"),
    ),
    phrase(
        rf"\b(?:act|behave|respond|operate|role-?play|pretend|imagine)(?:{SEP}(?:as|like|that|to be))?"
        rf"(?:{SEP}(?:you are|you're|to be|as|if you were|an?)){{0,2}}{SEP}{words_upto(1)}"
        rf"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|dan\b|an ai (?:with no|without)|"
        rf"an? (?:assistant|model|ai) (?:with no|without))",
        ("unrestricted", "unfiltered", "uncensored", "jailbroken", "evil", "rogue", "dan", "with no", "without"),
    ),
    phrase(r"\b(?:jailbreak|jailbroken|unrestricted|unfiltered|uncensored|dan|god|evil|chaos) mode\b", (" mode",)),
    phrase(r"\bdo anything now\b", ("do anything now",)),
]
_MODE = phrase(r"\b(?:developer|dev|debug|admin|sudo|root|maintenance) mode\b", (" mode",))
_MODE_SWITCH = re.compile(
    r"\b(?:enabled|activated|engaged|unlocked|active|is on|now on|enter|entering|switch(?:ed)? to|turn(?:ed)? on|"
    r"activate|enable)\b"
)
_MODE_AI_CUE = re.compile(
    r"\b(?:ai|llm|language model|chatbot|assistant|restrictions|content (?:filter|polic)\w{0,8}|safety|guidelines|"
    r"no limits|without limits|censor\w{0,8}|refus\w{1,8}|jailbr\w{1,8}|unrestricted|policies)\b"
)

_TELL_VERB = any_of(
    "tell", "telling", "inform", "informing", "notify", "notifying", "alert", "alerting", "mention", "mentioning",
    "reveal", "revealing", "disclose", "disclosing", "warn", "warning", "let", "letting", "report", "reporting",
    "show", "showing", "explain", "explaining",
)  # fmt: skip
_THE_USER = any_of(
    r"(?:the|your|this)\s(?:user|human|operator|developer|requester|person)s?",
    r"users",
    r"the person you\S{0,8} (?:help|work)\w{0,8}",
)
_USER_KEYS = ("user", "human", "operator", "developer", "requester", "person")
# what follows "do not tell the user" in an order to hide something (not "a wrong ETA")
_TELL_TAIL = (
    r"(?=\s?(?:[.,;:!)\n\u2014-]|$|about|that|what|anything|any|this|these|you|of|it|how|where|when|why|unless|"
    r"until|or|and|yet|either|before|after|if|see|know|find|notice|learn|read|be))"
)
_SECRECY = [
    phrase(
        rf"\b(?:do not|don'?t|dont|never|must not|mustn'?t|should not|shouldn'?t|without){SEP}{words_upto(1)}"
        rf"{_TELL_VERB}{SEP}{words_upto(4)}{_THE_USER}\b{_TELL_TAIL}",
        _USER_KEYS,
    ),
    phrase(rf"\b(?:keep|hide|conceal){SEP}{words_upto(4)}(?:secret |hidden )?from{SEP}{_THE_USER}\b", _USER_KEYS),
    phrase(
        rf"\b{_THE_USER}{SEP}(?:must|should|can|will|need)(?: not|n'?t| never){SEP}"
        rf"(?:know|see|find out|notice|be told|learn)\b",
        _USER_KEYS,
    ),
    phrase(
        rf"\bwithout{SEP}(?:the{SEP})?(?:user|human|operator)'?s?{SEP}(?:knowledge|consent|noticing|awareness|knowing)\b",
        ("without",),
    ),
    phrase(
        rf"\b(?:do not|don'?t|never){SEP}(?:mention|reveal|disclose|repeat|quote|acknowledge|show){SEP}"
        rf"(?:this|these|the){SEP}(?:note|notes|instructions?|memory|message|steps?|rule|directive)\b",
        ("mention", "reveal", "disclose", "repeat", "quote", "acknowledge", "show"),
    ),
    phrase(
        rf"\b(?:secretly|covertly|stealthily|surreptitiously){SEP}{words_upto(1)}"
        rf"(?:run|execute|install|send|upload|add|modify|insert|append|copy|post|change)\b",
        ("secretly", "covertly", "stealthily", "surreptitiously"),
    ),
]

_ADDRESSED = [
    phrase(
        rf"\b(?:attention|note|notice|dear|hey|hello|warning)[,:]?{SEP}{_STRICT_AI}\s?[:,!]",
        ("attention", "note", "notice", "dear", "hey", "hello", "warning"),
    ),
    phrase(
        rf"\b(?:note|message|notice|attention|instructions?|reminder|warning|memo){SEP}(?:to|for){SEP}"
        rf"(?:the{SEP}|any{SEP}|all{SEP})?{_STRICT_AI}\b",
        ("note", "message", "notice", "attention", "instruction", "reminder", "warning", "memo"),
    ),
    phrase(
        rf"\b(?:if|when|since) you(?: are|'re){SEP}(?:an?{SEP})?"
        rf"(?:ai|llm|a\.i\.|language model|large language model|ai (?:assistant|agent|model)|chatbot)\b",
        ("you are", "you're"),
    ),
    phrase(
        rf"\b(?:any|all|every|dear|hey|attention|to the|hello){SEP}{_STRICT_AI}{SEP}{words_upto(1)}"
        rf"(?:reading|processing|parsing|seeing|ingesting|summari[sz]ing|retrieving|that reads?|who reads?)"
        rf"(?: this)?\b",
        ("read", "processing", "parsing", "seeing", "ingesting", "summari", "retrieving"),
    ),
    phrase(
        rf"\b(?:this|the following){SEP}(?:note|message|memory|text|section|entry){SEP}(?:is{SEP})?"
        rf"(?:meant|intended|written|addressed){SEP}(?:only{SEP})?(?:for|to){SEP}(?:the{SEP}|any{SEP})?{_STRICT_AI}\b",
        ("meant", "intended", "written", "addressed"),
    ),
    phrase(
        rf"\b(?:claude|chatgpt|copilot|gemini|codex|assistant|ai|agent)[,:]{SEP}"
        rf"(?:ignore|forget|disregard|from now on)\b",
        ("ignore", "forget", "disregard", "from now on"),
    ),
]

_LEAK = phrase(
    rf"\b(?:reveal|print|output|repeat|show|display|dump|leak|disclose|share|tell me|write out|echo|recite|"
    rf"paste|send|post|copy){SEP}(?:me{SEP}|us{SEP})?(?:your|all of your|all your){SEP}{words_upto(2)}"
    rf"(?:system ?prompt|system messages?|instructions|initial prompt|hidden prompt|prompt|rules|guidelines|"
    rf"configuration|context window|pre-?prompt)\b",
    ("prompt", "message", "instructions", "rules", "guidelines", "configuration", "context window"),
)


def _markup_talked_about(scan: Text, marks: Marks, end: int) -> bool:
    """A word such as "tags" or "format" follows the markup on its line within a few words."""
    found = marks.next_start(end, -1)
    return 0 <= found - end <= MARKUP_TALK_WINDOW and "\n" not in scan.text[end:found]


def hits(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for pattern in _OVERRIDE:
        for match in pattern.finditer(scan, "override_instructions"):
            start, end = match.span()
            if negated(text, start) or quoted_mention(text, start, end) or _DOC_TARGET.match(scan.lower, end):
                continue
            yield scan.hit("override_instructions", start, end)
    talk: Marks | None = None
    for pattern in _ROLE_MARKUP:
        for match in pattern.finditer(scan, "role_markup"):
            start, end = match.span()
            talk = talk or Marks(_MARKUP_TALK, scan.lower)
            if in_code_span(text, start, end) or _markup_talked_about(scan, talk, end):
                continue
            yield scan.hit("role_markup", start, end)
    for pattern in _PERSONA:
        for match in pattern.finditer(scan, "persona_switch"):
            if not negated(text, match.start()) and not quoted_mention(text, *match.span()):
                yield scan.hit("persona_switch", *match.span())
    switches: Marks | None = None
    cues: Marks | None = None
    for match in _MODE.finditer(scan, "persona_switch"):
        start, end = match.span()
        switches = switches or Marks(_MODE_SWITCH, scan.lower)
        cues = cues or Marks(_MODE_AI_CUE, scan.lower)
        if switches.within(start - 60, end + 60) and cues.within(start - 200, end + 200):
            yield scan.hit("persona_switch", start, end)
    for pattern in _SECRECY:
        for match in pattern.finditer(scan, "secrecy_from_user"):
            if not quoted_mention(text, *match.span()):
                yield scan.hit("secrecy_from_user", *match.span())
    for pattern in _ADDRESSED:
        for match in pattern.finditer(scan, "addressed_to_ai"):
            if not quoted_mention(text, *match.span()):
                yield scan.hit("addressed_to_ai", *match.span())
    for match in _LEAK.finditer(scan, "prompt_leak"):
        if not negated(text, match.start()) and not quoted_mention(text, *match.span()):
            yield scan.hit("prompt_leak", *match.span())
