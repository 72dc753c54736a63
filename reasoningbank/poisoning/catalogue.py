"""Every rule of the detector: its name, its family and the reason a reviewer reads, in one table
(docs/security/memory-poisoning.md shows it), and what the rule modules share to write phrases."""

from __future__ import annotations

from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py)

# A rule's finding in the text it read: (rule name, start, end).
Hit = tuple[str, int, int]


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    reason: str


_RULES = (
    Rule("override_instructions", "addressed to an AI",
         "tells the reader to ignore, forget or replace its instructions: a memory describes practice, it does "
         "not give orders to the assistant that reads it"),
    Rule("role_markup", "addressed to an AI",
         "a chat-role or system marker (<system>, [INST], <|im_start|>, '### System:', 'SYSTEM NOTE:') that "
         "dresses a memory's text as the conversation's own instructions"),
    Rule("persona_switch", "addressed to an AI",
         "tries to give the reader a new identity or mode ('you are now …', developer or jailbreak mode) "
         "in which its rules no longer hold"),
    Rule("secrecy_from_user", "addressed to an AI",
         "asks the reader to hide what it does from the person it works for ('do not tell the user')"),
    Rule("addressed_to_ai", "addressed to an AI",
         "speaks to the AI that will read the memory ('note to AI assistants', 'if you are an AI') instead "
         "of recording what the team learned"),
    Rule("prompt_leak", "addressed to an AI",
         "asks the reader to print or send its own system prompt or instructions"),
    Rule("exfiltration_request", "exfiltration",
         "asks for keys, tokens, the environment, ~/.ssh or .env content to be sent to an address"),
    Rule("exfiltration_command", "exfiltration",
         "a command that reads keys, tokens, the environment, ~/.ssh or .env content and sends it over the "
         "network"),
    Rule("remote_script", "remote code",
         "pipes a script fetched from a host that is neither a well-known installer nor allowed by the "
         "organization into a shell or interpreter"),
    Rule("encoded_shell", "remote code",
         "decodes a blob (base64, hex, an encoded PowerShell command) and runs it: what runs cannot be read"),
    Rule("invisible_characters", "hidden text",
         "zero-width, Unicode tag or variation-selector characters inside the text: a person sees nothing, "
         "a model reads them"),
    Rule("bidi_controls", "hidden text",
         "bidirectional override or isolate characters in text with no right-to-left script: they make a "
         "person read something other than the characters' order"),
    Rule("homoglyph_words", "hidden text",
         "a word that mixes Latin letters with Cyrillic or Greek look-alikes ('ѕуѕtem'): spelled to slip past "
         "a filter while a model reads the word"),
    Rule("encoded_payload", "hidden text",
         "an encoded stretch (base64, hex, URL or HTML escapes, rot13, reversed) that decodes to text another "
         "rule flags"),
    Rule("url_beacon", "beacon",
         "an image or link whose URL carries data to fill in (a variable, a command, a placeholder), or an "
         "instruction to put data into a URL: rendering it sends that data away"),
)  # fmt: skip

RULES: dict[str, Rule] = {rule.name: rule for rule in _RULES}

# What the phrase rules are written with (the text is folded and lowered: one space or newline between
# words). A word is possessive: it is never given back letter by letter to try the rest of a pattern again
# (it is always followed by a separator, which a letter is not). A separator may be: what follows it can
# start with punctuation (~/.ssh, $TOKEN, .env).
SEP = r"[\W_]{1,3}"  # between two words: a space, punctuation, markup
WORD = r"[^\W_]{1,24}+"
# between two words of one clause: not across a sentence end (a dot only inside a name: .env); a line break
# may fall inside a clause (wrapped lines, a sentence split across two fields)
CLAUSE_SEP = r"(?:[^\w.!?;]|\.(?=\w)){1,3}"


def any_of(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


def words_upto(count: int, sep: str = CLAUSE_SEP) -> str:
    """Up to ``count`` words, each followed by a separator (bounded: no pattern backtracks far)."""
    return f"(?:{WORD}{sep}){{0,{count}}}"
