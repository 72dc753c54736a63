"""No file of the repository carries a merge's conflict markers: a conflict resolved by committing both
sides once left two versions of the consolidation settings' rows in docs/configuration.md, and no other
test reads a document's table as a whole."""

from __future__ import annotations

import re

from tests.repo_files import SKIPPED_DIRS, repo_files

MARKER = re.compile(r"^(<{7}|>{7}) ", re.MULTILINE)


def test_no_file_holds_a_merge_conflict_marker():
    found = []
    for path in repo_files(SKIPPED_DIRS - {"migrations"}):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        found += [f"{path}:{text.count(chr(10), 0, m.start()) + 1}" for m in MARKER.finditer(text)]
    assert found == []
