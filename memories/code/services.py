"""Anchor writes (docs/code-memory.md#anchors): an agent's or a transcript's anchors checked into drafts —
the repository and path normalised, the error's output reduced to its signature — and written for a
memory, replacing the ones it had.

Every check raises before anything is written, naming the argument (``anchors``) and, in its message, the
item and key (``anchors[2].line_end``): ``InvalidInput`` (400) for a wrong shape, ``Rejected`` (422,
``rejected_anchor``) for an anchor of the right shape that cannot be one;
distillation, whose anchors come from a transcript and an LLM, checks them one by one and drops the bad ones
instead (``anchor_draft_or_none``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from django.db import transaction

from accounts.access import Principal
from memories.code.anchors import PATH_MAX, REPOSITORY_MAX, SYMBOL_MAX, path_normalise, repository_normalise
from memories.code.signatures import OUTPUT_TAIL, error_signature
from memories.code.transcript_anchors import places_for_memory
from memories.core.selectors import memory_is_writable
from memories.models import Memory, MemoryAnchor
from memories.validation import text_scrub, write_scope_require
from reasoningbank.errors import Forbidden, InvalidInput, Rejected

ANCHORS_MAX = 20  # per memory: a lesson about more places than this is about none of them in particular
# what an anchor may say; anything else is an error on every transport (the contract refuses it first)
ANCHOR_KEYS = ("repository", "path", "symbol", "line_start", "line_end", "commit", "error")
LINE_MAX = 10_000_000
ERROR_MAX = 50_000  # characters of a command's output taken; its signature reads the last OUTPUT_TAIL
_COMMIT = re.compile(r"^[0-9a-f]{4,64}$")
# a symbol as languages spell them (``Parser.parse``, ``Foo::bar``, ``<lambda>``, ``operator()``): one token
_SYMBOL = re.compile(r"^[^\s\x00-\x1f\x7f]+$")

assert ERROR_MAX >= OUTPUT_TAIL


@dataclass(frozen=True)
class AnchorDraft:
    """A checked anchor, ready to store: a place (path, optional symbol and lines) or an error signature."""

    repository: str = ""
    path: str = ""
    symbol: str = ""
    line_start: int | None = None
    line_end: int | None = None
    commit: str = ""
    error_signature: str = ""
    error_text: str = ""

    def key(self) -> tuple[Any, ...]:
        """Two drafts with one key are one anchor (the second is dropped)."""
        return tuple(getattr(self, f.name) for f in fields(self))


def _refused(message: str, *, field: str) -> Rejected:
    """An anchor of the right shape whose content cannot be an anchor (a path outside the repository,
    lines out of order, an error without an error line): a 422 like the write gate's refusals, the body
    having matched the schema (docs/api.md#conventions)."""
    return Rejected(message, field=field, code="rejected_anchor")


def _argument(field: str) -> str:
    """The argument an error is filed under (``anchors`` for ``anchors[2].path``): REST's ``errors`` and
    MCP's list name arguments; the message says which item and key."""
    return field.split("[", 1)[0].split(".", 1)[0]


def _text(raw: Mapping[str, Any], name: str, field: str, maximum: int) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"{field}.{name} must be a string", field=_argument(field))
    value = value.strip()
    if "\x00" in value:
        raise InvalidInput(f"{field}.{name} must not contain NUL characters", field=_argument(field))
    if len(value) > maximum:
        raise InvalidInput(
            f"{field}.{name} is too long ({len(value)} characters; at most {maximum})", field=_argument(field)
        )
    return value


def _line(raw: Mapping[str, Any], name: str, field: str) -> int | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LINE_MAX:
        raise InvalidInput(f"{field}.{name} must be a line number (1 or more)", field=_argument(field))
    return value


def anchor_draft(raw: Any, *, field: str = "anchors[0]", repository: str = "") -> AnchorDraft:
    """One anchor checked: ``{repository?, path?, symbol?, line_start?, line_end?, commit?, error?}``.
    ``repository`` is the default for an anchor that names none (the memory's project's repository).
    ``error`` is a failing command's output (or just its last line, ``KeyError: 'user'``): only its
    signature and readable form are kept, never the output itself."""
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{field} must be an object with a path or an error", field=_argument(field))
    unknown = sorted(str(name) for name in raw if name not in ANCHOR_KEYS)
    if unknown:
        raise InvalidInput(
            f"{field} has an unknown key {unknown[0]!r}; an anchor takes {', '.join(ANCHOR_KEYS)}",
            field=_argument(field),
        )
    given_repository = _text(raw, "repository", field, 2 * REPOSITORY_MAX)
    normalised_repository = repository_normalise(given_repository) if given_repository else repository
    if given_repository and not normalised_repository:
        raise _refused(
            f"{field}.repository is not a git remote: give the remote's URL (git@github.com:acme/api.git, "
            "https://github.com/acme/api) or host/owner/name (github.com/acme/api)",
            field=_argument(field),
        )
    given_path = _text(raw, "path", field, PATH_MAX)
    path = path_normalise(given_path) if given_path else ""
    if given_path and not path:
        raise _refused(
            f"{field}.path must be relative to the repository's top (src/app/models.py), not absolute or outside it",
            field=_argument(field),
        )
    symbol = _text(raw, "symbol", field, SYMBOL_MAX)
    if symbol and not _SYMBOL.match(symbol):
        raise _refused(f"{field}.symbol must be one name without spaces (Parser.parse)", field=_argument(field))
    line_start, line_end = _line(raw, "line_start", field), _line(raw, "line_end", field)
    if line_end is not None and line_start is None:
        raise _refused(f"{field}.line_end needs line_start", field=_argument(field))
    if line_start is not None and line_end is not None and line_end < line_start:
        raise _refused(f"{field}.line_end must not be before line_start", field=_argument(field))
    if (symbol or line_start is not None) and not path:
        raise _refused(f"{field}: a symbol or lines need the path of their file", field=_argument(field))
    commit = _text(raw, "commit", field, 64).lower()
    if commit and not _COMMIT.match(commit):
        raise _refused(
            f"{field}.commit must be a git commit id (4 to 64 hexadecimal digits)", field=_argument(field)
        )
    signature_digest, signature_text = "", ""
    error = _text(raw, "error", field, ERROR_MAX)
    if error:
        signature = error_signature(error)
        if signature is None:
            raise _refused(
                f"{field}.error holds no error line: give the failing command's output, or at least its error line "
                "(KeyError: 'user', error[E0382]: …, panic: …)",
                field=_argument(field),
            )
        # the digest is a hash; the readable form is stored and shown, so secrets in it are redacted
        signature_digest, signature_text = signature.digest, text_scrub(signature.text, seen_in="anchor")[:500]
    if not path and not signature_digest:
        raise _refused(f"{field} needs a path or an error", field=_argument(field))
    return AnchorDraft(
        repository=normalised_repository, path=path, symbol=symbol, line_start=line_start, line_end=line_end,
        commit=commit, error_signature=signature_digest, error_text=signature_text,
    )  # fmt: skip


def anchor_draft_or_none(raw: Any, *, repository: str = "") -> AnchorDraft | None:
    """``anchor_draft``, or None for an anchor it refuses: for anchors from untrusted text (a transcript,
    an LLM's reply), where one bad anchor must not cost the memory."""
    try:
        return anchor_draft(raw, repository=repository)
    except InvalidInput:
        return None


def anchors_clean(raw: Any, *, field: str = "anchors", repository: str = "") -> list[AnchorDraft]:
    """A list of anchors checked (each named ``anchors[i]`` in an error), duplicates folded, at most
    ``ANCHORS_MAX``."""
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise InvalidInput(f"{field} must be a list of anchors", field=field)
    if len(raw) > ANCHORS_MAX:
        raise InvalidInput(f"{field} holds {len(raw)} anchors; at most {ANCHORS_MAX}", field=field)
    drafts: dict[tuple[Any, ...], AnchorDraft] = {}
    for index, item in enumerate(raw):
        draft = anchor_draft(item, field=f"{field}[{index}]", repository=repository)
        drafts.setdefault(draft.key(), draft)
    return list(drafts.values())


def anchors_create(*, memory: Memory, anchors: Sequence[AnchorDraft]) -> list[MemoryAnchor]:
    """Insert checked anchors for a memory the caller just made or may write (the caller holds the
    transaction): record, edit and distillation go through here. At most ``ANCHORS_MAX`` are kept."""
    rows = [
        MemoryAnchor(
            organization_id=memory.organization_id, memory=memory, repository=draft.repository, path=draft.path,
            symbol=draft.symbol, line_start=draft.line_start, line_end=draft.line_end, commit=draft.commit,
            error_signature=draft.error_signature, error_text=draft.error_text,
        )
        for draft in list({draft.key(): draft for draft in anchors}.values())[:ANCHORS_MAX]
    ]  # fmt: skip
    return MemoryAnchor.objects.bulk_create(rows) if rows else []


def memory_repository(memory: Memory) -> str:
    """The repository an anchor of this memory names when it names none: its project's, if tied to one."""
    project = memory.project if memory.project_id else None
    return project.repository if project is not None else ""


def memory_anchors_set(*, principal: Principal, memory: Memory, anchors: Any) -> list[MemoryAnchor]:
    """Replace a memory's anchors with ``anchors`` (raw: checked here; ``[]`` removes them all). The memory
    was loaded through the access layer; the token must be able to write it."""
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    drafts = anchors_clean(anchors, repository=memory_repository(memory))
    with transaction.atomic():
        return anchors_replace(memory=memory, anchors=drafts)


def anchors_replace(*, memory: Memory, anchors: Sequence[AnchorDraft]) -> list[MemoryAnchor]:
    """A memory's anchors deleted and ``anchors`` written instead (the caller checked the right to, and
    holds the transaction)."""
    MemoryAnchor.objects.filter(organization_id=memory.organization_id, memory=memory).delete()
    return anchors_create(memory=memory, anchors=anchors)


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def distilled_anchors(
    *, places: Any, text: str, outcome: str, named: Sequence[str] = (), repository: str = ""
) -> list[AnchorDraft]:
    """The anchors of one memory distilled from a session whose transcript showed ``places`` (its files
    read and edited, tests run, errors met: ``AgentSession.places``): the ones the memory is about
    (``places_for_memory``; ``named``, the files the LLM says it is about, count only where the
    transcript shows them), each checked like any anchor — a bad one is dropped, never an error."""
    chosen = places_for_memory(places if isinstance(places, list) else [], text=text, outcome=outcome, named=named)
    drafts: list[AnchorDraft] = []
    for place in chosen:
        if place.get("error_signature"):
            digest, shown = str(place["error_signature"]), str(place.get("error_text") or "")
            if _DIGEST.match(digest):  # computed when the session was handed in; its text from a scrubbed trace
                drafts.append(AnchorDraft(repository=repository, error_signature=digest, error_text=shown[:500]))
            continue
        where = {"path": place.get("path"), "symbol": place.get("symbol") or None}
        draft = anchor_draft_or_none(where, repository=repository)
        if draft is not None:
            drafts.append(draft)
    return drafts[:ANCHORS_MAX]
