"""Code anchors: where in a repository a memory is about, and whether that code changed since
(docs/code-memory.md)."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organization
from reasoningbank.sharding import SameOrganization


class MemoryAnchor(models.Model):
    """One place in the code a memory is about: a file (optionally a symbol and lines) in a repository at a
    commit, or an error signature (the normalised exception type, message and top frames). A memory has
    a few; recall at tool time looks them up by path or by signature (docs/code-memory.md#anchors)."""

    STATE_CURRENT = "current"  # true at its commit, nothing reported since says otherwise
    STATE_CODE_CHANGED = "code_changed"  # a later commit changed the anchored symbol or lines
    STATE_DELETED = "deleted"  # a later commit deleted the file
    STATE_CHOICES = [(STATE_CURRENT, "Current"), (STATE_CODE_CHANGED, "Code changed"), (STATE_DELETED, "Deleted")]

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey("memories.Memory", on_delete=models.CASCADE, related_name="anchors", db_constraint=False)
    # the normalised git remote (host/owner/name, no scheme, user or .git), empty when unknown
    repository = models.CharField(max_length=300, blank=True, default="")
    # repository-relative, POSIX separators, no leading ./ or /
    path = models.CharField(max_length=1000, blank=True, default="")
    symbol = models.CharField(max_length=300, blank=True, default="", help_text="a function or class, dotted")
    line_start = models.PositiveIntegerField(null=True, blank=True)
    line_end = models.PositiveIntegerField(null=True, blank=True)
    commit = models.CharField(max_length=64, blank=True, default="", help_text="the commit it was true at")
    # sha256 of the normalised signature; the readable form beside it for people and for the hook's text
    error_signature = models.CharField(max_length=64, blank=True, default="")
    error_text = models.CharField(max_length=500, blank=True, default="")
    state = models.CharField(max_length=15, choices=STATE_CHOICES, default=STATE_CURRENT)
    changed_commit = models.CharField(max_length=64, blank=True, default="", help_text="the commit that changed it")
    changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["path", "line_start", "id"]
        constraints = [
            SameOrganization(field="memory", name="memoryanchor_memory_same_org"),
            models.CheckConstraint(condition=~Q(path="") | ~Q(error_signature=""), name="memoryanchor_path_or_error"),
            models.CheckConstraint(
                condition=Q(line_start__isnull=True)
                | Q(line_end__isnull=True)
                | Q(line_end__gte=models.F("line_start")),
                name="memoryanchor_lines_ordered",
            ),
        ]
        indexes = [
            # a repository's file (path =) and recall's "a file in the same directory" (path LIKE 'dir/%'):
            # a pattern index serves both in any collation, where a plain one would read every anchor of
            # the repository for the prefix
            models.Index(
                fields=["organization", "repository", "path"],
                name="memoryanchor_path_prefix",
                opclasses=["int8_ops", "varchar_pattern_ops", "varchar_pattern_ops"],
            ),
            models.Index(
                fields=["organization", "error_signature"],
                name="memoryanchor_org_error",
                condition=~Q(error_signature=""),
            ),
            models.Index(fields=["memory"], name="memoryanchor_memory"),
            # by path whatever the repository, exactly or by a directory's prefix (LIKE 'src/%'): the
            # memories list's path filter, search's paths and the Code page's tree
            models.Index(
                fields=["organization", "path"],
                name="memoryanchor_org_path",
                opclasses=["int8_ops", "varchar_pattern_ops"],
            ),
        ]

    def __str__(self) -> str:
        where = self.path or self.error_text
        return f"{self.memory_id} @ {where}{':' + self.symbol if self.symbol else ''}"


class CodeCommit(models.Model):
    """A commit whose changes were reported (``code_changes_report``, docs/code-memory.md#staleness): when
    it was made and the paths it changed, so that a report repeated changes nothing, an anchor is only
    flagged by a commit younger than its own, and a session that made it can re-verify the memories
    anchored to those paths."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    repository = models.CharField(max_length=300, help_text="the normalised git remote")
    commit = models.CharField(max_length=64, help_text="the full git sha, lower case")
    committed_at = models.DateTimeField(help_text="the commit's committer date")
    # every path the commit changed: new paths, and a rename's or a deletion's old path
    paths = ArrayField(models.CharField(max_length=1000), default=list, blank=True)
    reported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "repository", "commit"], name="codecommit_once"),
        ]
        indexes = [models.Index(fields=["organization", "commit"], name="codecommit_org_commit")]

    def __str__(self) -> str:
        return f"{self.repository}@{self.commit[:12]}"
