"""What became of a session's code (docs/session-context.md#code-stability): a verdict on the code an
agent session wrote reaches, as a ``stability`` signal (the fourth signal type), every memory the
injection ledger (``SessionMemoryUse``) says the session was given.

Two reporters, one operation (``session_code_report``):

* a git post-commit hook ties the commit to the session — ``{session_id, commit, status: "committed"}``
  stores a ``SessionCommit`` and writes no signal;
* a CI job or cron, which knows commits but not sessions, reports ``{commit, status: "kept"}`` once the
  change has stood 7 days without a revert (positive), or ``"reverted"`` (negative). A reporter that
  knows the session may name it instead of, or as well as, the commit.

``kept`` judges code already tied to its session: the commit it names (or, naming the session alone,
one of the session's commits) must have been reported ``committed`` before — a 409 otherwise. A claim
that code stood for 7 days is about code someone recorded when it was written; were the tie made by
the verdict itself, one call could invent a commit and reward every memory the session was given.
``reverted`` may tie and judge at once: a revert is reported the moment it is seen, by whoever saw it.

The first verdict is final, for a commit and for each memory of a session: repeating it changes
nothing and says so (``already_reported``); a conflicting later one (reverted after kept, or kept after
reverted) is a 409 that writes nothing. A signal already folded into confidence is not quietly
reversed by a second opinion, and a reporter that got it wrong has an unambiguous error instead of a
silent flip. The 7 days are the reporter's to judge (``scripts/git-code-report`` waits for them): only
git knows when the code was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.services import audit_record
from memories.confidence.services import memory_stability
from memories.core.selectors import memory_is_readable
from memories.models import Memory, SessionCommit, SessionMemoryUse
from memories.validation import session_key_clean, text_clean, write_scope_require
from reasoningbank.errors import Conflict, InvalidInput, NotFound

CODE_STATUSES = (SessionCommit.STATUS_COMMITTED, SessionCommit.STATUS_KEPT, SessionCommit.STATUS_REVERTED)
SESSION_KEY_MAX = 200  # the ledger's session_key
# a full sha: SHA-1 repositories (40 hex digits) and SHA-256 ones (64); an abbreviation could name two
COMMIT_PATTERN = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class CodeReport:
    session_key: str
    commit: str
    status: str
    reached: list[str] = field(default_factory=list)  # memories the verdict reached now
    signalled: list[str] = field(default_factory=list)  # of those, the active ones given a signal
    already_reported: bool = False
    message: str = ""


def commit_clean(value: Any) -> str:
    """A full git sha in lower case, or "" when none was given."""
    commit = text_clean(value, "commit", 64, required=False).lower()
    if commit and not COMMIT_PATTERN.fullmatch(commit):
        raise InvalidInput("commit must be a full git sha: 40 (or 64) hexadecimal digits", field="commit")
    return commit


@transaction.atomic
def session_code_report(*, principal: Principal, status: Any, session_key: Any = "", commit: Any = "") -> CodeReport:
    """Tie a commit to its session (``committed``), or give the session's memories the verdict on its
    code (``kept`` / ``reverted``), within the principal's organization only. Rows are locked (the
    commit's, then the ledger's in memory order), so two reports at once count once."""
    write_scope_require(principal)
    if status not in CODE_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(CODE_STATUSES)}", field="status")
    session_key = session_key_clean(session_key)
    commit = commit_clean(commit)
    if not session_key and not commit:
        raise InvalidInput("name the session (session_id), the commit (commit) or both", field="session_id")
    if status == SessionCommit.STATUS_COMMITTED and not (session_key and commit):
        missing = "commit" if not commit else "session_id"
        raise InvalidInput(f"a committed report ties a commit to its session: {missing} is required", field=missing)

    kept = status == SessionCommit.STATUS_KEPT
    tie, tied_now = _commit_tie(principal, session_key, commit, tie_new=not kept) if commit else (None, False)
    if tie is not None:
        session_key = tie.session_key
    elif not _session_known(principal, session_key):
        raise NotFound(
            f"session {session_key!r} not found: no memory was given to it (memory_search or memory_context "
            "with this session_id) and no commit is tied to it",
            field="session_id",
        )
    elif kept and not access_filter(SessionCommit, principal).filter(session_key=session_key).exists():
        raise Conflict(
            f"session {session_key!r} has no commit tied to it: kept is the verdict on code tied to its session "
            "when it was committed; report the commit with this session_id and status committed first "
            "(scripts/git-code-report does, as a git post-commit hook)",
            field="session_id",
        )
    if status == SessionCommit.STATUS_COMMITTED:
        if tied_now:
            _audit(principal, session_key, commit, status, [], 0)
            message = f"Commit {commit[:12]} tied to session {session_key!r}; report it kept or reverted later"
        else:
            message = f"Commit {commit[:12]} was already tied to session {session_key!r}: nothing changed"
        return CodeReport(session_key, commit, status, already_reported=not tied_now, message=message)
    return _verdict(principal, session_key, commit, status, tie)


def _verdict(principal: Principal, session_key: str, commit: str, status: str, tie: SessionCommit | None) -> CodeReport:
    if tie is not None and tie.status not in (SessionCommit.STATUS_COMMITTED, status):
        raise Conflict(
            f"commit {commit[:12]} was already reported {tie.status}"
            f"{_on(tie.verdict_at)}; the first verdict is final, so this {status} report changes nothing",
            field="status",
        )
    rows = list(
        access_filter(SessionMemoryUse, principal)
        .select_for_update(of=("self",))
        .select_related("memory")
        .filter(session_key=session_key)
        .order_by("memory_id")
    )
    earlier = next((row for row in rows if row.stability and row.stability != status), None)
    if earlier is not None:
        raise Conflict(
            f"session {session_key!r}'s code was already reported {earlier.stability}{_on(earlier.stability_at)}; "
            f"the first verdict is final, so this {status} report changes nothing",
            field="status",
        )
    # the same verdict was given before (to the commit, or to memories of the session): a repeat
    judged_before = (tie is not None and tie.status == status) or any(row.stability == status for row in rows)
    kept = status == SessionCommit.STATUS_KEPT
    reached: list[SessionMemoryUse] = []
    signalled: list[str] = []
    for row in rows:
        memory: Memory = row.memory
        if row.stability or not memory_is_readable(principal, memory):
            continue  # judged before; or another project's memory, left for a report that may reach it
        reached.append(row)
        if memory.state == Memory.STATE_ACTIVE:  # an archived memory is marked, its confidence left alone
            memory_stability(principal=principal, memory=memory, kept=kept, session_id=session_key, commit=commit)
            signalled.append(memory.id)
    now = timezone.now()
    if reached:
        access_filter(SessionMemoryUse, principal).filter(pk__in=[row.pk for row in reached]).update(
            stability=status, stability_at=now
        )
    commit_judged_now = False
    if tie is not None and tie.status != status:  # the commit's own first verdict (it was only committed)
        tie.status, tie.verdict_at = status, now
        tie.save(update_fields=["status", "verdict_at"])
        commit_judged_now = True
    reached_ids = [row.memory_id for row in reached]
    changed = bool(reached) or commit_judged_now
    already = not changed and judged_before
    if changed:
        _audit(principal, session_key, commit, status, reached_ids, len(signalled))
    return CodeReport(
        session_key,
        commit,
        status,
        reached=reached_ids,
        signalled=signalled,
        already_reported=already,
        message=_message(session_key, commit, status, reached_ids, len(signalled), already, changed),
    )


def _commit_tie(
    principal: Principal, session_key: str, commit: str, *, tie_new: bool = True
) -> tuple[SessionCommit, bool]:
    """The commit's row, locked; created (tied to ``session_key``) when the report names both, the
    commit is new and ``tie_new`` allows it. Returns it and whether it was created now."""
    ties = access_filter(SessionCommit, principal).select_for_update()
    tie = ties.filter(commit=commit).first()
    created = False
    if tie is None:
        if not session_key:
            raise NotFound(
                f"commit {commit} not found: no session is tied to it. Report it first with its session_id "
                "and status committed (scripts/git-code-report does, as a git post-commit hook)",
                field="commit",
            )
        if not tie_new:
            raise Conflict(
                f"commit {commit[:12]} is not tied to a session yet: kept is the verdict on a commit tied to its "
                "session when it was made; report it with its session_id and status committed first "
                "(scripts/git-code-report does, as a git post-commit hook)",
                field="commit",
            )
        try:
            with transaction.atomic():  # a savepoint: a concurrent report of the same commit may win the insert
                tie = SessionCommit.objects.create(
                    organization=principal.organization,
                    session_key=session_key,
                    commit=commit,
                    reported_by=principal.actor_label,
                )
                created = True
        except IntegrityError:
            tie = ties.get(commit=commit)
    if session_key and tie.session_key != session_key:
        raise Conflict(
            f"commit {commit[:12]} is tied to session {tie.session_key!r}, not {session_key!r}: "
            "a commit belongs to one session",
            field="commit",
        )
    return tie, created


def _session_known(principal: Principal, session_key: str) -> bool:
    """Whether the organization has heard of the session: the ledger, or a commit tied to it."""
    return (
        access_filter(SessionMemoryUse, principal).filter(session_key=session_key).exists()
        or access_filter(SessionCommit, principal).filter(session_key=session_key).exists()
    )


def _on(when: Any) -> str:
    return f" on {when:%Y-%m-%d %H:%M} UTC" if when is not None else ""


def _message(
    session_key: str, commit: str, status: str, reached: list[str], signals: int, already: bool, changed: bool
) -> str:
    of = f"commit {commit[:12]} of session {session_key!r}" if commit else f"session {session_key!r}"
    if already:
        return f"Already reported {status} for {of}: nothing changed"
    if not changed:  # a session known by its commits only, named alone: its verdict has nowhere to go
        return f"No memory given to session {session_key!r} is waiting for a verdict: nothing changed"
    if not reached:
        return f"Recorded {status} for {of}; no memory given to the session was waiting for a verdict"
    noun = "memory" if len(reached) == 1 else "memories"
    sign = "+" if status == SessionCommit.STATUS_KEPT else "−"
    archived = len(reached) - signals
    tail = f" ({archived} archived, marked without a signal)" if archived else ""
    return f"Code {status} for {of}: stability {sign} on {len(reached)} {noun} given to the session{tail}"


def _audit(principal: Principal, session_key: str, commit: str, status: str, reached: list[str], signals: int) -> None:
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="session.code_report",
        data={
            "session_id": session_key,
            "commit": commit,
            "status": status,
            "memories": reached[:50],
            "signals": signals,
        },
    )
