"""Staleness (docs/code-memory.md#staleness): what a commit changed, applied to the anchors of the
repository's memories; a session that works in that code and succeeds re-verifies them; memories whose
every code anchor's file was deleted are archived once the grace period is over.

Three writes:

* ``code_changes_report`` — a commit's files (status, old-side hunks, touched symbols) reported by the
  git hook, the plugin or CI. Each anchor of the repository on a changed path gets the verdict of
  ``memories.code.staleness``: ``code_changed`` (with the commit and its time), ``deleted``, or its path
  moved by a rename. **Order-safe**: only a commit younger than the anchor's own counts (the anchor's
  commit's time when a report of it is known, else when the anchor was written); when two commits
  changed an anchor, the older one is kept ("changed since"). **Idempotent**: the same report again
  finds every anchor already judged by it and changes nothing.
* ``anchors_reverify`` — when a session given a memory ends in success, each of its ``code_changed``
  anchors on a path one of the session's commits changed (a ``committed`` report tied it, its changes
  reported) moves to the newest such commit and is ``current`` again: the agent worked in that code
  with the memory and succeeded.
* ``code_deleted_archive`` — the daily task: an active memory whose every code anchor is ``deleted``,
  the last deletion older than ``CODE_DELETED_GRACE_DAYS``, is archived (``code_deleted``), restorable
  like any archive; a memory a person restored after the deletion is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import AuditEvent, Organization
from accounts.services import audit_record
from memories.code.anchors import path_normalise, repository_normalise
from memories.code.staleness import CODE_CHANGED, DELETED, FILE_STATUSES, RENAMED, FileChange, Place, anchor_verdict
from memories.core.selectors import memory_is_readable
from memories.models import CodeCommit, Memory, MemoryAnchor, SessionCommit
from memories.moderation.services import memories_archive
from memories.validation import write_scope_require
from reasoningbank.errors import InvalidInput

ARCHIVE_BATCH = 500


@dataclass
class ChangesApplied:
    repository: str
    commit: str
    flagged: list[str] = field(default_factory=list)  # memories with an anchor newly code_changed
    deleted: list[str] = field(default_factory=list)  # memories with an anchor newly deleted
    moved: list[str] = field(default_factory=list)  # memories with an anchor moved by a rename
    already_reported: bool = False


@transaction.atomic
def code_changes_report(
    *, principal: Principal, repository: str, commit: str, committed_at: datetime, files: Sequence[FileChange]
) -> ChangesApplied:
    """Apply one commit's changes to the anchors of ``repository`` in the principal's organization (the
    memories it may read). Anchor rows are locked in id order, so two reports at once apply once."""
    write_scope_require(principal)
    # any spelling of a remote, or one already normalised (host/owner/name, as the contract hands it on)
    repo = repository_normalise(repository) or repository_normalise(f"https://{repository}")
    if not repo:
        raise InvalidInput(
            "repository must be a git remote (https://host/owner/name, git@host:owner/name.git, …)",
            field="repository",
        )
    files = [_file_clean(f, i) for i, f in enumerate(files)]
    known = _commit_record(principal, repo, commit, committed_at, files)
    result = ChangesApplied(repo, commit, already_reported=known)
    by_path: dict[str, FileChange] = {}
    for change in files:
        by_path.setdefault(change.before, change)
    if not by_path:
        return result
    anchors = list(
        access_filter(MemoryAnchor, principal)
        .select_for_update(of=("self",))
        .select_related("memory")
        .filter(repository=repo, path__in=list(by_path))
        .order_by("id")
    )
    since = _anchor_times(principal, repo, anchors)
    for anchor in anchors:
        if anchor.commit == commit or committed_at <= since[anchor.pk]:
            continue  # its own commit, or one older than it: it says nothing of what the anchor saw
        if not memory_is_readable(principal, anchor.memory):
            continue  # another project's memory: a report by a token that reaches it will
        _apply(anchor, by_path[anchor.path], commit, committed_at, result)
    if result.flagged or result.deleted or result.moved:
        result.already_reported = False
        audit_record(
            organization=principal.organization,
            actor=principal,
            verb="code.changes",
            data={
                "repository": repo,
                "commit": commit,
                "code_changed": result.flagged[:50],
                "deleted": result.deleted[:50],
                "moved": result.moved[:50],
            },
        )
    return result


def _file_clean(change: FileChange, index: int) -> FileChange:
    where = f"files[{index}]"
    if change.status not in FILE_STATUSES:
        raise InvalidInput(f"{where}.status must be one of {', '.join(FILE_STATUSES)}", field=f"{where}.status")
    path = path_normalise(change.path)
    if not path:
        raise InvalidInput(f"{where}.path must be a path relative to the repository's top", field=f"{where}.path")
    old_path = path_normalise(change.old_path) if change.old_path else ""
    if change.status == RENAMED and not old_path:
        raise InvalidInput(f"{where}.old_path is required for a rename: the path before it", field=f"{where}.old_path")
    return FileChange(change.status, path, old_path, tuple(change.hunks), change.symbols)


def _commit_record(
    principal: Principal, repo: str, commit: str, committed_at: datetime, files: Sequence[FileChange]
) -> bool:
    """Keep the commit's time and paths (a large commit comes in several reports: their paths add up);
    True when every path was known already."""
    paths = sorted({p for f in files for p in (f.path, f.old_path) if p})
    rows = access_filter(CodeCommit, principal).select_for_update()
    row = rows.filter(repository=repo, commit=commit).first()
    if row is None:
        try:
            with transaction.atomic():  # a concurrent report of the same commit may win the insert
                CodeCommit.objects.create(
                    organization=principal.organization,
                    repository=repo,
                    commit=commit,
                    committed_at=committed_at,
                    paths=paths,
                )
                return False
        except IntegrityError:
            row = rows.get(repository=repo, commit=commit)
    new = [p for p in paths if p not in set(row.paths)]
    if new:
        row.paths = sorted({*row.paths, *new})
        row.save(update_fields=["paths"])
    return not new


def _anchor_times(principal: Principal, repo: str, anchors: Sequence[MemoryAnchor]) -> dict[int, datetime]:
    """Since when each anchor holds: its commit's time when that commit was reported, else when it was
    written (it was true then)."""
    commits = {a.commit for a in anchors if a.commit}
    times = dict(
        access_filter(CodeCommit, principal)
        .filter(repository=repo, commit__in=commits)
        .values_list("commit", "committed_at")
    )
    return {a.pk: times.get(a.commit, a.created_at) for a in anchors}


def _apply(anchor: MemoryAnchor, change: FileChange, commit: str, at: datetime, result: ChangesApplied) -> None:
    place = Place(anchor.path, anchor.symbol, anchor.line_start, anchor.line_end)
    verdict = anchor_verdict(place, change, deleted=anchor.state == MemoryAnchor.STATE_DELETED)
    fields: list[str] = []
    if verdict.path != anchor.path:
        anchor.path = verdict.path
        fields.append("path")
        result.moved.append(anchor.memory_id)
    if verdict.state == DELETED and anchor.state != MemoryAnchor.STATE_DELETED:
        anchor.state, anchor.changed_commit, anchor.changed_at = MemoryAnchor.STATE_DELETED, commit, at
        fields += ["state", "changed_commit", "changed_at"]
        result.deleted.append(anchor.memory_id)
    elif verdict.state == CODE_CHANGED and (
        anchor.state == MemoryAnchor.STATE_CURRENT
        # the older of two changes is kept: the code changed since then
        or (
            anchor.state == MemoryAnchor.STATE_CODE_CHANGED and anchor.changed_at is not None and at < anchor.changed_at
        )
        # a deleted file added again after its deletion
        or (anchor.state == MemoryAnchor.STATE_DELETED and anchor.changed_at is not None and at > anchor.changed_at)
    ):
        anchor.state, anchor.changed_commit, anchor.changed_at = MemoryAnchor.STATE_CODE_CHANGED, commit, at
        fields += ["state", "changed_commit", "changed_at"]
        result.flagged.append(anchor.memory_id)
    if fields:
        anchor.save(update_fields=fields)


# --- re-verification ------------------------------------------------------------------------------------


def anchors_reverify(*, principal: Principal, session_key: str, memory_ids: Iterable[str]) -> list[str]:
    """The session ended in success: each ``code_changed`` anchor of ``memory_ids`` (memories it was given)
    on a path one of the session's reported commits changed moves to the newest such commit and is current
    again. Returns the memories re-verified."""
    ids = list(dict.fromkeys(memory_ids))
    if not session_key or not ids:
        return []
    shas = list(
        access_filter(SessionCommit, principal).filter(session_key=session_key).values_list("commit", flat=True)
    )
    if not shas:
        return []
    commits = list(access_filter(CodeCommit, principal).filter(commit__in=shas).order_by("-committed_at", "commit"))
    if not commits:
        return []
    anchors = (
        access_filter(MemoryAnchor, principal)
        .select_for_update()
        .filter(memory_id__in=ids, state=MemoryAnchor.STATE_CODE_CHANGED)
        .order_by("id")
    )
    verified: list[str] = []
    for anchor in anchors:
        newest = next((c for c in commits if c.repository == anchor.repository and anchor.path in c.paths), None)
        if newest is None or (anchor.changed_at is not None and newest.committed_at < anchor.changed_at):
            continue  # the session did not touch this file, or only before the change that flagged it
        anchor.commit, anchor.state, anchor.changed_commit, anchor.changed_at = (
            newest.commit,
            MemoryAnchor.STATE_CURRENT,
            "",
            None,
        )
        anchor.save(update_fields=["commit", "state", "changed_commit", "changed_at"])
        verified.append(anchor.memory_id)
    if verified:
        audit_record(
            organization=principal.organization,
            actor=principal,
            verb="code.reverify",
            data={"session_id": session_key, "memories": sorted(set(verified))[:50]},
        )
    return sorted(set(verified))


# --- the grace period -----------------------------------------------------------------------------------

# Active memories of one organization whose code anchors (those with a path) are all deleted, the last
# deletion before the cutoff, and that no person restored since it (a restore overrules the evidence).
_DUE_SQL = f"""
SELECT a.memory_id
FROM {MemoryAnchor._meta.db_table} a
JOIN memories_memory m ON m.id = a.memory_id AND m.organization_id = a.organization_id
WHERE a.organization_id = %(org)s AND a.path <> '' AND m.state = 'active' AND a.memory_id > %(after)s
GROUP BY a.memory_id
HAVING bool_and(a.state = 'deleted') AND max(a.changed_at) < %(cutoff)s
   AND NOT EXISTS (
       SELECT 1 FROM {AuditEvent._meta.db_table} e
        WHERE e.organization_id = %(org)s AND e.target_type = 'memory' AND e.target_id = a.memory_id
          AND e.verb = 'memory.restore' AND e.created_at > max(a.changed_at))
ORDER BY a.memory_id
LIMIT %(batch)s
"""


def code_deleted_archive(now: datetime | None = None) -> dict[str, int]:
    """Archive (``code_deleted``) every memory whose every code anchor's file was deleted more than
    ``CODE_DELETED_GRACE_DAYS`` ago, organization by organization, in batches."""
    now = now or timezone.now()
    grace = settings.CODE_DELETED_GRACE_DAYS
    cutoff = now - timedelta(days=grace)
    archived = 0
    orgs = Organization.objects.filter(
        Q(pk__in=MemoryAnchor.objects.filter(state=MemoryAnchor.STATE_DELETED).values("organization_id"))
    )
    for org in orgs.order_by("pk"):
        after = ""
        while True:
            with connection.cursor() as cursor:
                cursor.execute(_DUE_SQL, {"org": org.pk, "after": after, "cutoff": cutoff, "batch": ARCHIVE_BATCH})
                ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                break
            archived += len(
                memories_archive(
                    organization=org,
                    memory_ids=ids,
                    reason=Memory.ARCHIVED_CODE_DELETED,
                    only_active=True,
                    data={"why": f"every file it is anchored to was deleted over {grace} days ago"},
                )
            )
            after = ids[-1]
    return {"archived": archived}
