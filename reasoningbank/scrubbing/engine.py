"""``scrub_secrets``: every rule family over one text, in the order that makes the most specific one
report a secret (key files, then our own tokens, then other prefixed tokens, then key names, then
context, then what only decoding shows), with the count and kinds of what was replaced and our own
credentials handed back.

How a text is read (docs/security/secret-scrubbing.md#how-a-text-is-read):

1. Split secrets are joined first (``splits``): zero-width characters and shell line continuations
   are taken out of a working copy, so "rb_abc\\u200bdef" or "ghp_abc\\\\\\ndef" is matched whole.
2. Each family reports spans of that working copy (``Finding``); a secret found is overwritten with
   ``FILL`` characters of the same number, so positions never move, a later rule never takes part of
   it again, and a rule that would have matched it (a key name before a token) finds nothing.
3. The spans are mapped back to the text as given and replaced by ``[REDACTED:<kind>]``; everything
   between them is the text as given, zero-width characters and continuations included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from reasoningbank.scrubbing.assignments import ASSIGNMENT_RULES
from reasoningbank.scrubbing.command_lines import command_lines_find
from reasoningbank.scrubbing.contextual import PROSE_CONTEXT, prose_keys_find, telegram_find, twilio_find
from reasoningbank.scrubbing.encoded import base64_find, discord_find, long_runs
from reasoningbank.scrubbing.key_files import pem_find, putty_find
from reasoningbank.scrubbing.passwords import prose_passwords_find
from reasoningbank.scrubbing.primitives import (
    FILL,
    Finding,
    Rule,
    anchor_positions,
    lower_same_length,
    redaction_marker,
)
from reasoningbank.scrubbing.splits import splits_normalise
from reasoningbank.scrubbing.tokens import OWN_TOKEN_KINDS, TOKEN_RULES

# a NUL in the text as given is another control character in the working copy (same length), so that
# only what was found is FILL
_FILL_STANDIN = "\x01"


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text, how many secrets were replaced, and which kinds (sorted, unique).

    ``own_tokens``: the raw values of our own credentials that were found (API and OAuth tokens,
    webhook signing secrets), in order, without repeats, for revocation; never logged or shown (not
    in ``repr``) and not part of equality.
    """

    text: str
    redactions: int
    kinds: tuple[str, ...]
    own_tokens: tuple[str, ...] = field(default=(), repr=False, compare=False)


RULES: tuple[Rule, ...] = TOKEN_RULES + ASSIGNMENT_RULES

SECRET_KINDS: tuple[str, ...] = tuple(
    sorted(
        {
            "private_key", "cli_password", "telegram_bot_token", "twilio_auth_token", "twilio_api_key",
            "high_entropy_secret", "password_in_prose", "discord_bot_token", "base64_encoded_secret",
            *(rule.kind for rule in RULES),
        }
    )
)  # fmt: skip


class _Scan:
    """The working copy and what was found in it so far."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = lower_same_length(text)  # never recomputed: anchors inside a FILL match nothing
        self.found: list[Finding] = []

    def accept(self, found: Iterable[Finding]) -> None:
        """Keep each finding (in order) that touches no secret found before, and overwrite it with FILL."""
        pieces: list[str] = []
        done = 0
        for finding in found:
            start, end = finding.start, finding.end
            if start < done or end <= start or self.text.find(FILL, start, end) != -1:
                continue
            pieces.append(self.text[done:start])
            pieces.append(FILL * (end - start))
            done = end
            self.found.append(finding)
        if pieces:
            pieces.append(self.text[done:])
            self.text = "".join(pieces)


def _rule_find(rule: Rule, text: str, lowered: str) -> list[Finding]:
    """Every match of ``rule`` (not overlapping), as the span of what its replacement drops."""
    positions = anchor_positions(lowered, rule.anchors)
    if not positions:
        return []
    marker = redaction_marker(rule.kind)
    found: list[Finding] = []
    done = 0
    for anchor in positions:
        position = anchor - rule.offset
        if position < done:
            continue  # inside a secret already taken, or before the text
        match = rule.pattern.match(text, position)
        if match is None:
            continue
        start, end = match.span()
        if rule.replace is not None:
            replacement = rule.replace(match, marker)
            if replacement is None:
                continue
            kept_before, _, kept_after = replacement.partition(marker)
            start, end = start + len(kept_before), end - len(kept_after)  # the prefix and suffix it keeps
        value = text[start:end]
        found.append(Finding(start, end, rule.kind, (value,) if rule.kind in OWN_TOKEN_KINDS else ()))
        done = match.end()
    return found


def _context(found: list[Finding]) -> list[int]:
    """Where a secret of a kind that names a context word was found (an access key's id before its secret)."""
    return [
        position
        for finding in found
        if any(word in finding.kind for word in PROSE_CONTEXT)
        for position in (finding.start, finding.end)
    ]


def _scan(text: str, *, decode: bool) -> _Scan:
    scan = _Scan(text)
    scan.accept(pem_find(scan.text))
    scan.accept(putty_find(scan.text))
    # before the key names: "TWILIO_API_KEY=SK..." is Twilio's, and its SID anchors the secret after it
    scan.accept(twilio_find(scan.text, scan.lowered))
    for rule in RULES:
        scan.accept(_rule_find(rule, scan.text, scan.lowered))
    scan.accept(telegram_find(scan.text))
    scan.accept(command_lines_find(scan.text, scan.lowered))
    scan.accept(prose_passwords_find(scan.text, scan.lowered))
    scan.accept(prose_keys_find(scan.text, scan.lowered, _context(scan.found)))
    runs = long_runs(scan.text)
    scan.accept(discord_find(scan.text, runs))
    if decode:  # what a base64 run decodes to is read once, not decoded again
        scan.accept(base64_find(scan.text, runs, lambda inner: _scan(inner, decode=False).found))
    return scan


def scrub_secrets(text: str) -> ScrubResult:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<kind>]``.

    Multi-line key files first, then our own tokens, then specific token formats before the
    generic key-name rules (``API_KEY=sk-proj-...`` is reported as an ``openai_key`` rather than a
    generic assignment), the context rules for keys in prose when every token with a known shape is
    taken, and base64 runs last (each decoded and read like a text of its own).
    """
    normalised = splits_normalise(text)
    work = normalised.text
    if FILL in work:
        work = work.replace(FILL, _FILL_STANDIN)
    found = sorted(_scan(work, decode=True).found)
    out: list[str] = []
    done = 0
    kinds: set[str] = set()
    own: list[str] = []
    for finding in found:
        start, end = normalised.original_span(finding.start, finding.end)
        out.append(text[done:start])
        out.append(redaction_marker(finding.kind))
        done = end
        kinds.add(finding.kind)
        own.extend(finding.own)
    out.append(text[done:])
    return ScrubResult(
        text="".join(out) if found else text,
        redactions=len(found),
        kinds=tuple(sorted(kinds)),
        own_tokens=tuple(dict.fromkeys(own)),
    )
