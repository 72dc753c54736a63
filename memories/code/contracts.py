"""The anchors' shapes in the operations' contracts (docs/code-memory.md#anchors): what ``memory_record``
(and an edit) takes, and what every result that shows a memory returns. An unknown key inside an anchor is
refused on every transport (the ``Contract`` base forbids extra fields), a wrong type too (400); what the
schema cannot say — a path inside the repository, lines in order, an error that holds an error line — is
checked, and the values normalised, by ``memories.code.services.anchor_draft`` (a 422, ``rejected_anchor``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from memories.code.anchors import PATH_MAX, REPOSITORY_MAX, SYMBOL_MAX
from memories.code.services import ANCHORS_MAX, ERROR_MAX, LINE_MAX
from reasoningbank.contracts import NUL_FREE, Contract


def _text(maximum: int) -> Any:
    return StringConstraints(strip_whitespace=True, max_length=maximum, pattern=NUL_FREE)


class AnchorIn(Contract):
    """A place in the code the memory is about (a path, optionally a symbol and lines), or an error it is
    about, or both."""

    repository: Annotated[str | None, _text(2 * REPOSITORY_MAX)] = Field(
        default=None,
        description="the repository's git remote, any spelling (git@github.com:acme/api.git, github.com/acme/api); "
        "left out: the project's repository, if it is tied to one",
    )
    path: Annotated[str | None, _text(PATH_MAX)] = Field(
        default=None, description="the file, relative to the repository's top (src/app/models.py)"
    )
    symbol: Annotated[str | None, _text(SYMBOL_MAX)] = Field(
        default=None, description="a function or class in the file, dotted (Parser.parse)"
    )
    line_start: Annotated[int | None, Field(ge=1, le=LINE_MAX)] = Field(default=None, description="first line")
    line_end: Annotated[int | None, Field(ge=1, le=LINE_MAX)] = Field(default=None, description="last line")
    commit: Annotated[str | None, _text(64)] = Field(default=None, description="the commit it was true at")
    error: Annotated[str | None, _text(ERROR_MAX)] = Field(
        default=None,
        description="a failing command's output, or its error line (KeyError: 'user'): only its signature "
        "(exception type, message without what varies, three innermost frames) is kept",
    )


Anchors = Annotated[
    list[AnchorIn],
    Field(
        default_factory=list,
        max_length=ANCHORS_MAX,
        description=f"Where in the code this is about: files (with a symbol or lines), or an error; at most "
        f"{ANCHORS_MAX}",
    ),
]


class AnchorOut(Contract):
    """An anchor as stored: the place or error signature, and whether the code changed since."""

    repository: str = Field(description="the normalised remote (host/owner/name); empty when unknown")
    path: str = Field(description="repository-relative; empty for an error-only anchor")
    symbol: str
    line_start: int | None
    line_end: int | None
    commit: str = Field(description="the commit it was true at; empty when unknown")
    error_signature: str = Field(description="SHA-256 of the error's normalised type, message and frames; or empty")
    error_text: str = Field(description="the error signature's readable form")
    state: Literal["current", "code_changed", "deleted"] = Field(
        description="current; code_changed: a later commit changed its symbol or lines; deleted: its file was deleted"
    )
    changed_commit: str = Field(description="the commit that changed or deleted it; empty while current")


REPOSITORY_DESCRIPTION = (
    "The git remote of the repository the agent works in (any spelling: `git remote get-url origin`). Used "
    "only when `project` is left out: the project tied to that repository, when there is one "
    "(docs/code-memory.md#projects-by-repository)"
)
Repository = Annotated[str | None, _text(2 * REPOSITORY_MAX), Field(description=REPOSITORY_DESCRIPTION)]


def anchors_raw(anchors: list[AnchorIn] | None) -> list[dict[str, Any]] | None:
    """The anchors a service takes: each without the keys left out."""
    if anchors is None:
        return None
    return [anchor.model_dump(exclude_none=True) for anchor in anchors]
