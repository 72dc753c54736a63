"""Reading a repository's history (memories/code/history.py): a real git repository built here, parsed
for its commits, paths, renames and touched symbols, with its fix and revert chains; an exported history
(the shipped slice of pallets/click); the copies of the reader shipped by the SDK and the plugin."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from memories.code.history import (
    git_is_ancestor,
    git_log_read,
    git_remote,
    history_batches,
    history_chains,
    history_jsonl_read,
    pull_requests_read,
    symbol_of,
)

ROOT = Path(__file__).resolve().parents[3]
SLICE = Path(__file__).parent / "git_history" / "pallets-click-slice.jsonl.gz"
COPIES = [
    ROOT / "clients/python/reasoningbank_client/git_history.py",
    ROOT / "integrations/claude-code/scripts/reasoningbank_git_history.py",
]

PARSER_V1 = """class Parser:
    def parse(self, text):
        return text.split(",")


def helper(value):
    return value * 2
"""
PARSER_V2 = PARSER_V1.replace('text.split(",")', 'text.split(";")')
PARSER_V3 = PARSER_V2.replace("value * 2", "value * 3")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "api"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.test")
    git(repo, "config", "user.name", "Dev")
    git(repo, "remote", "add", "origin", "git@github.com:acme/api.git")
    return repo


def test_a_git_log_is_read_oldest_first_with_paths_renames_and_the_symbols_its_hunks_touch(repo: Path) -> None:
    first = commit(repo, "Add the parser", {"src/parser.py": PARSER_V1, "README.md": "api\n"})
    second = commit(repo, "Split on semicolons\n\nThe CSV export uses ';'.", {"src/parser.py": PARSER_V2})
    (repo / "docs").mkdir()
    git(repo, "mv", "README.md", "docs/README.md")
    third = commit(repo, "Move the readme", {})
    commits = git_log_read(str(repo))
    assert [c["sha"] for c in commits] == [first, second, third]
    assert commits[1]["parents"] == [first]
    assert commits[1]["subject"] == "Split on semicolons" and commits[1]["body"] == "The CSV export uses ';'."
    assert commits[1]["date"].startswith("20") and commits[1]["author"] == "Dev"
    added = {f["path"]: f["status"] for f in commits[0]["files"]}
    assert added == {"src/parser.py": "A", "README.md": "A"}
    # the hunk changed a line of Parser.parse: git's python pattern names the innermost def
    assert commits[1]["files"] == [{"path": "src/parser.py", "status": "M", "old_path": "", "symbols": ["parse"]}]
    assert commits[2]["files"] == [{"path": "docs/README.md", "status": "R", "old_path": "README.md", "symbols": []}]


def test_without_symbols_the_paths_come_from_name_status(repo: Path) -> None:
    commit(repo, "Add the parser", {"src/parser.py": PARSER_V1})
    git(repo, "mv", "src/parser.py", "src/reader.py")
    commit(repo, "Rename the parser module", {})
    commits = git_log_read(str(repo), symbols=False)
    assert commits[1]["files"] == [{"path": "src/reader.py", "status": "R", "old_path": "src/parser.py", "symbols": []}]


def test_since_and_max_commits_bound_the_range_and_a_dropped_commit_is_no_ancestor(repo: Path) -> None:
    first = commit(repo, "one", {"a.txt": "1\n"})
    second = commit(repo, "two", {"a.txt": "2\n"})
    third = commit(repo, "three", {"a.txt": "3\n"})
    assert [c["sha"] for c in git_log_read(str(repo), since=first)] == [second, third]
    assert [c["sha"] for c in git_log_read(str(repo), max_commits=1)] == [third]
    assert git_is_ancestor(str(repo), second)
    git(repo, "reset", "-q", "--hard", first)  # a force-push rewrote the history after the first commit
    commit(repo, "two again", {"a.txt": "22\n"})
    assert not git_is_ancestor(str(repo), second)
    assert git_remote(str(repo)) == "git@github.com:acme/api.git"


def test_a_revert_names_its_commit_and_a_fix_mends_the_last_commit_that_touched_its_symbol(repo: Path) -> None:
    first = commit(repo, "Add the parser", {"src/parser.py": PARSER_V1})
    second = commit(repo, "Split on semicolons", {"src/parser.py": PARSER_V2})
    third = commit(repo, "Triple the helper", {"src/parser.py": PARSER_V3})
    git(repo, "revert", "--no-edit", third)
    fix = commit(repo, "Fix the parser for quoted fields", {"src/parser.py": PARSER_V2.replace('";"', '";" ')})
    named = commit(repo, f"fix: restore the split broken by {second[:8]}", {"b.txt": "x\n"})
    commits = git_log_read(str(repo))
    history_chains(commits)
    by_sha = {c["sha"]: c for c in commits}
    revert = commits[3]
    assert revert["subject"].startswith("Revert") and revert["reverts"] == third
    assert by_sha[fix]["fixes"] == [second]  # parse was last touched by the second commit (the revert touched helper)
    assert by_sha[named]["fixes"] == [second]  # named in the message
    assert by_sha[first]["fixes"] == [] and by_sha[third]["reverts"] == ""


def test_the_shipped_slice_reads_as_an_exported_history_with_its_revert_chain() -> None:
    with gzip.open(SLICE, "rt") as handle:
        commits = history_jsonl_read(handle)
    assert len(commits) == 30
    history_chains(commits)
    reverts = [c for c in commits if c["reverts"]]
    assert [(c["sha"][:8], c["reverts"][:8]) for c in reverts] == [("bb7be1f6", "6c4a77ba")]
    merges = [c for c in commits if len(c["parents"]) > 1]
    assert merges and all(not c["files"] for c in merges)
    renamed = [f for c in commits for f in c["files"] if f["status"] == "R"]
    assert renamed and all(f["old_path"] for f in renamed)
    assert any(f["symbols"] for c in commits for f in c["files"])


def test_pull_requests_are_read_by_merge_commit_and_attached_to_it(tmp_path: Path) -> None:
    with gzip.open(SLICE, "rt") as handle:
        commits = history_jsonl_read(handle)
    merge = next(c for c in commits if len(c["parents"]) > 1)
    lines = [json.dumps({"number": 3224, "title": "Hide UNSET", "body": "Closes #3145", "merge_commit": merge["sha"]})]
    pulls = pull_requests_read(lines)
    history_chains(commits, pulls)
    assert merge["pr"] == {"number": 3224, "title": "Hide UNSET", "body": "Closes #3145"}
    assert sum(1 for c in commits if "pr" in c) == 1


def test_symbols_are_read_from_the_usual_hunk_headers() -> None:
    assert symbol_of("def parse(self, text):") == "parse"
    assert symbol_of("    async def fetch(url):") == "fetch"
    assert symbol_of("class Parser(Base):") == "Parser"
    assert symbol_of("func (s *Server) Serve(ctx context.Context) error {") == "Serve"
    assert symbol_of("pub fn main() {") == "main"
    assert symbol_of("") == "" and symbol_of(None) == "" and symbol_of("import os") == ""


def test_batches_are_consecutive_and_bounded() -> None:
    assert [len(b) for b in history_batches(list(range(45)), 20)] == [20, 20, 5]


@pytest.mark.parametrize("copy", COPIES, ids=lambda p: p.parent.name)
def test_the_sdk_and_the_plugin_ship_the_same_reader(copy: Path) -> None:
    assert copy.read_text() == (ROOT / "memories/code/history.py").read_text(), (
        f"{copy.relative_to(ROOT)} differs from memories/code/history.py: copy it again"
    )
