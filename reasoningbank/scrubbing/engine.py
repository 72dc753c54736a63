"""``scrub_secrets``: every rule family over one text, in the order that makes the most specific one
report a secret (key files, then our own tokens, then other prefixed tokens, then key names, then
context), with the count and kinds of what was replaced and our own tokens handed back."""

from __future__ import annotations

from dataclasses import dataclass, field

from reasoningbank.scrubbing.assignments import ASSIGNMENT_RULES
from reasoningbank.scrubbing.command_lines import scrub_command_lines
from reasoningbank.scrubbing.contextual import scrub_prose_keys, scrub_telegram, scrub_twilio
from reasoningbank.scrubbing.key_files import scrub_pem, scrub_putty
from reasoningbank.scrubbing.primitives import Rule, anchor_positions, lower_same_length, redaction_marker
from reasoningbank.scrubbing.tokens import OWN_TOKEN_KINDS, TOKEN_RULES


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text, how many secrets were replaced, and which kinds (sorted, unique).

    ``own_tokens``: the raw values of our own tokens that were found, in order, without repeats,
    for revocation; never logged or shown (not in ``repr``) and not part of equality.
    """

    text: str
    redactions: int
    kinds: tuple[str, ...]
    own_tokens: tuple[str, ...] = field(default=(), repr=False, compare=False)


RULES: tuple[Rule, ...] = TOKEN_RULES + ASSIGNMENT_RULES

SECRET_KINDS: tuple[str, ...] = tuple(
    sorted(
        {
            "private_key", "cli_password", "telegram_bot_token", "twilio_auth_token", "high_entropy_secret",
            *(rule.kind for rule in RULES),
        }
    )
)  # fmt: skip


def _apply(rule: Rule, text: str, lowered: str, found: list[str]) -> tuple[str, int]:
    """Replace every match of ``rule`` in ``text``; matches never overlap. The raw values of our
    own tokens are appended to ``found``."""
    positions = anchor_positions(lowered, rule.anchors)
    if not positions:
        return text, 0
    marker = redaction_marker(rule.kind)
    out: list[str] = []
    done = count = 0  # text[:done] has been copied to out
    for position in positions:
        if position < done:
            continue  # inside a secret already replaced
        match = rule.pattern.match(text, position)
        if match is None:
            continue
        replacement = marker if rule.replace is None else rule.replace(match, marker)
        if replacement is None:
            continue
        out.append(text[done : match.start()])
        out.append(replacement)
        done = match.end()
        count += 1
        if rule.kind in OWN_TOKEN_KINDS:
            found.append(match.group())
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


def scrub_secrets(text: str) -> ScrubResult:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<kind>]``.

    Multi-line key files first, then our own tokens, then specific token formats before the
    generic key-name rules (``API_KEY=sk-proj-...`` is reported as an ``openai_key`` rather than a
    generic assignment), and the context rules for keys in prose last, when every token with a
    known shape is already a marker.
    """
    kinds: set[str] = set()
    found: list[str] = []
    total = 0

    def counted(kind: str, result: tuple[str, int]) -> str:
        nonlocal total
        if result[1]:
            total += result[1]
            kinds.add(kind)
        return result[0]

    text = counted("private_key", scrub_pem(text))
    text = counted("private_key", scrub_putty(text))
    lowered = lower_same_length(text)
    for rule in RULES:
        text, count = _apply(rule, text, lowered, found)
        if count:
            total += count
            kinds.add(rule.kind)
            lowered = lower_same_length(text)  # positions moved
    text = counted("telegram_bot_token", scrub_telegram(text))
    text = counted("twilio_auth_token", scrub_twilio(text, lower_same_length(text)))
    # after the rules: a value they replaced starts with "[" and is left alone here
    text = counted("cli_password", scrub_command_lines(text))
    text = counted("high_entropy_secret", scrub_prose_keys(text, lower_same_length(text)))
    return ScrubResult(text=text, redactions=total, kinds=tuple(sorted(kinds)), own_tokens=tuple(dict.fromkeys(found)))
