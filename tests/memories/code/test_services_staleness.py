"""Staleness on a small real git repository the test builds (docs/code-memory.md#staleness): each commit
reported as the git hook reports it (the plugin's code_changes module), anchors flagged code_changed,
deleted or moved; reports repeated or out of order; the grace period's archive and its restore; a
successful session that worked in the code re-verifies it; another organization's anchors untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memories.code.contracts_staleness import CodeChangesInput, code_changes_report_run
from memories.code.services_staleness import code_deleted_archive
from memories.code_reports.services import session_code_report
from memories.models import Memory, MemoryAnchor
from memories.moderation.services import memory_restore
from memories.sessions.services_ledger import session_outcome_attribute, session_uses_record
from tests.factories import MemoryFactory
from tests.git_repo import EPOCH, Repo

REPOSITORY = "github.com/acme/api"
PARSER = """\
class Parser:
    def parse(self, text):
        return text.strip()

    def render(self, tree):
        return str(tree)


def tokenize(text):
    return text.split()
"""


def report(principal: Any, body: dict[str, Any]) -> Any:
    return code_changes_report_run(principal, CodeChangesInput.model_validate(body))


def anchor_on(principal: Any, memory: Memory, path: str, commit: str, **place: Any) -> MemoryAnchor:
    return MemoryAnchor.objects.create(
        organization=principal.organization, memory=memory, repository=REPOSITORY, path=path, commit=commit, **place
    )


def fresh(anchor: MemoryAnchor) -> MemoryAnchor:
    anchor.refresh_from_db()
    return anchor


@pytest.fixture
def repo(tmp_path: Path, agent: Any) -> Repo:
    """app/parser.py and app/util.py committed at EPOCH, that commit reported (the hook's job)."""
    repo = Repo(tmp_path / "api")
    repo.write("app/parser.py", PARSER)
    repo.write("app/util.py", "def slug(text):\n    return text.lower()\n")
    repo.first = repo.commit("first", at=0)  # type: ignore[attr-defined]
    report(agent, repo.report())
    return repo


def test_a_commit_that_rewrites_the_anchored_function_flags_the_memory_and_one_touching_another_does_not(agent, repo):
    parse_memory = MemoryFactory(principal=agent, title="Parser.parse strips whitespace first")
    render_memory = MemoryFactory(principal=agent, title="Parser.render needs a tree")
    parse = anchor_on(agent, parse_memory, "app/parser.py", repo.first, symbol="Parser.parse")
    render = anchor_on(agent, render_memory, "app/parser.py", repo.first, symbol="Parser.render")
    whole_class = anchor_on(agent, render_memory, "app/parser.py", repo.first, symbol="Parser")

    repo.write("app/parser.py", PARSER.replace("text.strip()", "text.strip().lower()"))
    second = repo.commit("lower-case the parsed text", at=60)
    out = report(agent, repo.report())

    assert out.code_changed == sorted({parse_memory.id, render_memory.id})  # parse, and the class holding it
    assert (fresh(parse).state, fresh(parse).changed_commit) == ("code_changed", second)
    assert fresh(parse).changed_at == datetime.fromtimestamp(EPOCH + 60, tz=UTC)
    assert fresh(render).state == "current"  # another function of the same file
    assert fresh(whole_class).state == "code_changed"


def test_without_a_symbol_the_anchored_lines_decide_and_a_whole_file_anchor_waits_for_a_deletion(agent, repo):
    memory = MemoryFactory(principal=agent)
    lines_hit = anchor_on(agent, memory, "app/parser.py", repo.first, line_start=8, line_end=10)
    lines_missed = anchor_on(agent, memory, "app/parser.py", repo.first, line_start=1, line_end=3)
    whole = anchor_on(agent, memory, "app/parser.py", repo.first)

    repo.write("app/parser.py", PARSER.replace("text.split()", "text.split(',')"))
    repo.commit("split on commas", at=60)
    report(agent, repo.report())

    assert [fresh(a).state for a in (lines_hit, lines_missed, whole)] == ["code_changed", "current", "current"]


def test_the_same_report_twice_changes_nothing_and_an_older_commit_never_flags_a_newer_anchor(agent, repo):
    memory = MemoryFactory(principal=agent)
    repo.write("app/parser.py", PARSER.replace("str(tree)", "repr(tree)"))
    older = repo.commit("render with repr", at=60)
    older_report = repo.report()
    repo.write("app/util.py", "def slug(text):\n    return text.casefold()\n")
    newer = repo.commit("casefold", at=120)
    report(agent, repo.report())
    # the memory was written against the newer commit: the older one's report comes late
    anchor = anchor_on(agent, memory, "app/parser.py", newer, symbol="Parser.render")

    late = report(agent, older_report)

    assert fresh(anchor).state == "current" and late.code_changed == []
    anchor.commit = repo.first
    anchor.save()
    assert report(agent, older_report).code_changed == [memory.id]
    again = report(agent, older_report)
    assert again.code_changed == [] and again.already_reported is True
    assert (fresh(anchor).state, fresh(anchor).changed_commit) == ("code_changed", older)


def test_a_rename_moves_the_anchor_and_keeps_it_current_unless_its_symbol_changed_too(agent, repo):
    kept = MemoryFactory(principal=agent)
    changed = MemoryFactory(principal=agent)
    tokenize = anchor_on(agent, kept, "app/parser.py", repo.first, symbol="tokenize")
    parse = anchor_on(agent, changed, "app/parser.py", repo.first, symbol="Parser.parse")

    repo.git("mv", "app/parser.py", "app/parsing.py")
    repo.write("app/parsing.py", PARSER.replace("text.strip()", "text.strip(' ')"))
    repo.commit("rename the parser module", at=60)
    out = report(agent, repo.report())

    assert sorted(out.moved) == sorted([kept.id, changed.id]) and out.code_changed == [changed.id]
    assert (fresh(tokenize).path, fresh(tokenize).state) == ("app/parsing.py", "current")
    assert (fresh(parse).path, fresh(parse).state) == ("app/parsing.py", "code_changed")


def test_a_deleted_files_memories_are_archived_after_the_grace_period_and_a_restore_sticks(agent, repo, settings):
    settings.CODE_DELETED_GRACE_DAYS = 14
    gone = MemoryFactory(principal=agent, title="slug lower-cases")
    half = MemoryFactory(principal=agent, title="slug and parser")
    slug = anchor_on(agent, gone, "app/util.py", repo.first, symbol="slug")
    anchor_on(agent, half, "app/util.py", repo.first)
    anchor_on(agent, half, "app/parser.py", repo.first)  # its other file stays

    repo.git("rm", "-q", "app/util.py")
    deletion = repo.commit("drop util", at=60)
    out = report(agent, repo.report())

    assert sorted(out.deleted) == sorted([gone.id, half.id])
    assert (fresh(slug).state, fresh(slug).changed_commit) == ("deleted", deletion)
    deleted_at = datetime.fromtimestamp(EPOCH + 60, tz=UTC)
    assert code_deleted_archive(now=deleted_at + timedelta(days=13))["archived"] == 0  # within the grace period
    assert code_deleted_archive(now=deleted_at + timedelta(days=15))["archived"] == 1
    gone.refresh_from_db()
    half.refresh_from_db()
    assert (gone.state, gone.archived_reason) == ("archived", "code_deleted") and half.state == "active"

    memory_restore(principal=agent, memory=gone)  # as POST /api/v1/memories/<id>/restore does

    assert code_deleted_archive(now=datetime.now(tz=UTC) + timedelta(days=60))["archived"] == 0
    gone.refresh_from_db()
    assert gone.state == "active"


def test_a_successful_session_given_the_memory_that_changed_the_file_re_verifies_it(agent, repo):
    memory = MemoryFactory(principal=agent)
    idle = MemoryFactory(principal=agent)
    anchor = anchor_on(agent, memory, "app/parser.py", repo.first, symbol="Parser.parse")
    other = anchor_on(agent, idle, "app/parser.py", repo.first, symbol="Parser.parse")
    session_uses_record(principal=agent, session_key="claude-9", memory_ids=[memory.id], via="search")

    repo.write("app/parser.py", PARSER.replace("text.strip()", "text.strip().lower()"))
    fix = repo.commit("lower-case", at=60)
    session_code_report(principal=agent, status="committed", session_key="claude-9", commit=fix)  # the hook
    report(agent, repo.report())
    assert fresh(anchor).state == "code_changed"

    session_outcome_attribute(principal=agent, session_key="claude-9", succeeded=True)

    assert (fresh(anchor).state, fresh(anchor).commit, fresh(anchor).changed_commit) == ("current", fix, "")
    assert fresh(other).state == "code_changed"  # not given to the session


def test_a_failed_session_or_one_that_did_not_touch_the_file_re_verifies_nothing(agent, repo):
    memory = MemoryFactory(principal=agent)
    anchor = anchor_on(agent, memory, "app/parser.py", repo.first, symbol="Parser.parse")
    repo.write("app/parser.py", PARSER.replace("text.strip()", "text.strip().lower()"))
    repo.commit("someone else's change", at=60)
    report(agent, repo.report())
    repo.write("app/util.py", "def slug(text):\n    return text\n")
    elsewhere = repo.commit("the session's change elsewhere", at=120)
    report(agent, repo.report())
    for key, succeeded in (("s-fail", False), ("s-elsewhere", True)):
        session_uses_record(principal=agent, session_key=key, memory_ids=[memory.id], via="search")
        session_code_report(principal=agent, status="committed", session_key=key, commit=elsewhere if succeeded else
                            "0" * 40)  # fmt: skip

        session_outcome_attribute(principal=agent, session_key=key, succeeded=succeeded)

        assert fresh(anchor).state == "code_changed"


@pytest.mark.cross_tenant("code_changes_report")
def test_another_organizations_anchors_on_the_same_repository_are_untouched(agent, repo, cast, make_token):
    _, charlie = make_token(cast.org_b)
    theirs = MemoryFactory(principal=charlie)
    foreign = MemoryAnchor.objects.create(
        organization=cast.org_b, memory=theirs, repository=REPOSITORY, path="app/parser.py", symbol="Parser.parse"
    )
    foreign.created_at = datetime.fromtimestamp(EPOCH - 60, tz=UTC)
    foreign.save()
    repo.git("rm", "-q", "app/parser.py")
    repo.commit("drop the parser", at=60)

    out = report(agent, repo.report())

    assert out.deleted == [] and fresh(foreign).state == "current"
    assert code_deleted_archive(now=datetime.now(tz=UTC) + timedelta(days=60))["archived"] == 0
