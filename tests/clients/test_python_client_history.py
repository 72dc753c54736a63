"""The Python client's ``seed_from_git`` (docs/sdks.md#seeding-from-git-history) against the real service
(its requests handed to Django's test client in this process, the test database behind it): a real
repository's log read on the client's side, the dry run, the seeding, and a re-run that sends only the new
commit."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from reasoningbank_client import ReasoningBank

from memories.models import AgentSession, Memory, MemoryAnchor, SeededCommit

pytestmark = pytest.mark.django_db
URL = "http://testserver"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
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
    git(repo, "remote", "add", "origin", "https://github.com/acme/api.git")
    commit(repo, "billing.py", "def invoice_total(lines):\n    return sum(lines)\n",
           "Add invoice totals for the monthly billing run")  # fmt: skip
    commit(repo, "billing.py", "def invoice_total(lines):\n    return round(sum(lines), 2)\n",
           "Fix invoice totals rounding: floats summed to 0.30000000000000004 on three lines")  # fmt: skip
    return repo


class DjangoTransport(httpx.BaseTransport):
    """httpx's requests answered by the service's own views (middleware, authentication, contracts)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = Client().generic(
            request.method,
            request.url.raw_path.decode(),
            data=request.read(),
            content_type=request.headers.get("content-type", ""),
            HTTP_AUTHORIZATION=request.headers["authorization"],
        )
        return httpx.Response(answer.status_code, headers=dict(answer.items()), content=answer.content)


@pytest.fixture
def bank(cast: Any, make_token: Any) -> Any:
    raw, _ = make_token(cast.org_a, projects=[cast.project_a])
    http = httpx.Client(transport=DjangoTransport())
    with ReasoningBank(URL, raw, http_client=http) as client:
        yield client


def test_the_sdk_reads_the_local_log_estimates_fills_the_bank_and_re_runs_with_new_commits_only(
    cast: Any, bank: Any, repo: Path
) -> None:
    dry = bank.seed_from_git(repo, dry_run=True)
    assert len(dry) == 1 and dry[0]["dry_run"] and dry[0]["received"] == 2 and dry[0]["estimate"]["batches"] == 1
    assert not AgentSession.objects.exists()

    done = bank.seed_from_git(repo)
    assert done[0]["repository"] == "github.com/acme/api" and done[0]["submitted"] == 2
    # a subject alone restates its title: the write gate keeps it out; the fix says more (its chain)
    assert done[0]["waiting_for_llm"] and done[0]["episodic_memories"] == 1 and done[0]["gated"] == 1
    fix = Memory.objects.get(title__startswith="Fix invoice totals rounding")
    anchor = MemoryAnchor.objects.get(memory=fix)
    assert (anchor.repository, anchor.path, anchor.symbol) == ("github.com/acme/api", "billing.py", "invoice_total")
    assert "fixes commit" in fix.content  # the fix is linked to the commit that last touched invoice_total

    assert bank.seed_from_git(repo) == []  # nothing new: nothing sent
    newest = commit(repo, "billing.py", "def invoice_total(lines):\n    return round(sum(lines), 2) or 0\n",
                    "Return zero for an empty invoice instead of None from the rounding")  # fmt: skip
    again = bank.seed_from_git(repo)
    assert again[0]["received"] == 1 and again[0]["last_commit"] == newest
    assert SeededCommit.objects.count() == 3
    progress = bank.history_progress("git@github.com:acme/api.git")
    assert progress["commits"] == 3 and progress["batches"] == 2 and progress["last_commit"] == newest
