"""The client SDKs (docs/sdks.md) against the live service started by scripts/run.sh: every agent
operation, the export and both import forms with the sync and the async Python client, the typed
errors (a wrong token; another organization's memory is a 404), the TypeScript client under Node
(record → search → get), and every code example of docs/sdks.md as written but for its address and tokens."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from reasoningbank_client import AsyncReasoningBank, AuthenticationError, NotFound, ReasoningBank, ValidationError

from tests.clients.doc_examples import (
    module_name,
    node_binary,
    sdk_examples,
    tsc,
    typescript_workspace,
    with_service,
)
from tests.clients.drift import PYTHON_CLIENT, TS_CLIENT, node_missing
from tests.e2e.conftest import Setup, manage_ok
from tests.e2e.harness import Service, token_from, unique

pytestmark = pytest.mark.anyio
SCOPES = "memories:read,memories:write,consolidation:run,admin"


@pytest.fixture(scope="module")
def admin_token(service: Service, acme: Setup) -> str:
    """An org-wide token of acme with every scope (the export and import need ``admin``)."""
    return token_from(manage_ok(service, "create_token", "acme", "--label", "sdk", "--scopes", SCOPES))


@pytest.fixture(scope="module")
def other_orgs_memory(service: Service) -> str:
    """A memory of another organization, recorded with that organization's own token."""
    manage_ok(service, "create_org", "sdk-other", "--plan", "free", "--owner-email", "other@example.com")
    manage_ok(service, "create_project", "sdk-other", "their-app")
    token = token_from(manage_ok(service, "create_token", "sdk-other", "--label", "theirs"))
    with ReasoningBank(service.url, token) as theirs:
        return theirs.record(
            title=f"Their private deploy checklist {unique()}",
            description="Before a release of their app",
            content="Run the migrations on a copy of production first, then tag the release.",
            outcome="success",
        )["id"]


class Awaited:
    """The sync client's methods as coroutines, so one scenario drives both clients."""

    def __init__(self, bank: ReasoningBank) -> None:
        self.bank = bank

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.bank, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


async def records_of(stream: Iterator[dict[str, Any]] | AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(stream, Iterator):
        return list(stream)
    return [record async for record in stream]


async def every_operation(bank: Any, export: Any, other_id: str) -> None:
    marker = unique("SDK")
    recorded = await bank.record(
        title=f"Pin the toolchain version {marker}",
        description="When CI and laptops build differently",
        content="Pin the toolchain in the repository so every machine builds alike.",
        outcome="success",
        tags=["ci"],
        project="web-app",
    )
    memory_id = recorded["id"]
    assert (await bank.get(memory_id))["title"].endswith(marker)
    # anchors (docs/code-memory.md#anchors): recorded with the memory, returned by get, refused when bad
    anchored = await bank.record(
        title=f"Close the pool in teardown {marker}",
        description="When a test leaks database connections",
        content="Close the pool in the teardown, or the next test waits for a free connection.",
        outcome="success",
        project="web-app",
        anchors=[
            {"repository": "git@github.com:acme/web.git", "path": "app/db.py", "symbol": "Pool.close", "line_start": 3},
            {"error": "E   TimeoutError: pool exhausted after 30 s"},
        ],
    )
    anchors = (await bank.get(anchored["id"]))["anchors"]
    assert [(a["repository"], a["path"], a["symbol"]) for a in anchors] == [
        ("", "", ""), ("github.com/acme/web", "app/db.py", "Pool.close")
    ]  # fmt: skip
    assert anchors[0]["error_text"].startswith("TimeoutError")
    with pytest.raises(ValidationError) as refused:
        await bank.record(
            title=f"Anchored outside {marker}", description="d", content="Nothing reaches the bank from here.",
            outcome="success", project="web-app", anchors=[{"path": "/etc/passwd"}],
        )  # fmt: skip
    assert list(refused.value.errors) == ["anchors"]
    found = await bank.search(query=f"pin the toolchain {marker}", project="web-app", session_id=marker)
    assert memory_id in [hit["id"] for hit in found["memories"]]
    assert (await bank.feedback(memory_id, helpful=True, comment="saved a build"))["success"] is True
    assert (await bank.outcome(memory_id, succeeded=True, session_id=marker))["recorded"] is True
    assert (await bank.context(project="web-app", task="fix the CI build"))["project"] == "web-app"
    asked = await bank.ask(question=f"How do we keep builds alike ({marker})?", project="web-app")
    assert asked["answer"] and asked["llm_called"] is True
    by_file = await bank.recall(
        repository="git@github.com:acme/shop.git", path="/w/shop/ci/build.sh", root="/w/shop", session_id=marker
    )
    assert (by_file["repository"], by_file["path"], by_file["injection_block"]) == (
        "github.com/acme/shop",
        "ci/build.sh",
        "",
    )
    by_error = await bank.recall(error="  File \"/w/shop/ci/pin.py\", line 3, in pin\nKeyError: 'node'\n")
    assert by_error["error_signature"]["type"] == "KeyError" and by_error["error_signature"]["frames"] == ["pin.py:pin"]
    trace = f"user: CI differs from my laptop ({marker})\nassistant: pinned the toolchain; the build is green."
    submitted = await bank.session_submit(session_id=marker, outcome="success", trace=trace, project="web-app")
    assert submitted["session_id"] == marker
    assert (await bank.session_get(marker))["session_id"] == marker
    report = await bank.session_code_report(
        session_id=marker, commit=hashlib.sha1(marker.encode()).hexdigest(), status="committed"
    )
    assert report["status"] == "committed"
    changes = await bank.code_changes_report(
        repository="git@github.com:acme/web-app.git",
        commit=hashlib.sha1(marker.encode()).hexdigest(),
        committed_at="2026-11-30T10:00:00Z",
        files=[{"status": "modified", "path": "src/app.py", "hunks": [{"start": 3, "lines": 1}], "symbols": ["main"]}],
    )
    assert changes["repository"] == "github.com/acme/web-app" and changes["already_reported"] is False
    run = await bank.consolidate(project="web-app", dry_run=True, wait=True)
    assert (run["dry_run"], run["status"]) == (True, "completed"), run

    records = await records_of(export(project="web-app"))
    assert records[0]["type"] == "header" and any(record.get("id") == memory_id for record in records)
    text = "".join(json.dumps(record) + "\n" for record in records)
    assert (await bank.import_ndjson(text, project="web-app", dry_run=True))["dry_run"] is True
    claude_md = f"# Project notes\n\n- Pin the toolchain in the repository so every machine builds alike ({marker}).\n"
    imported = await bank.import_bank(text=claude_md, format="claude-md", project="web-app", dry_run=True)
    assert imported["format"] == "claude-md"

    with pytest.raises(NotFound) as caught:
        await bank.get(other_id)
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    with pytest.raises(NotFound):
        await bank.feedback(other_id, helpful=False)


@pytest.mark.cross_tenant("api-memory")
def test_the_sync_python_client_runs_every_operation_against_the_live_service(service, admin_token, other_orgs_memory):
    with ReasoningBank(service.url, admin_token) as bank:
        anyio.run(every_operation, Awaited(bank), bank.export, other_orgs_memory)


@pytest.mark.cross_tenant("api-memory")
async def test_the_async_python_client_runs_every_operation_against_the_live_service(
    service, admin_token, other_orgs_memory
):
    async with AsyncReasoningBank(service.url, admin_token) as bank:
        await every_operation(bank, bank.export, other_orgs_memory)


async def test_a_wrong_token_is_an_authentication_error_for_both_clients(service):
    with ReasoningBank(service.url, "rb_not_a_real_token") as bank, pytest.raises(AuthenticationError) as sync_error:
        bank.search(query="anything")
    async with AsyncReasoningBank(service.url, "rb_not_a_real_token") as bank:
        with pytest.raises(AuthenticationError) as async_error:
            await bank.search(query="anything")
    for error in (sync_error.value, async_error.value):
        assert error.status == 401 and error.code and error.detail


SMOKE = """
import { ReasoningBank, NotFound } from "reasoningbank-client";
const bank = new ReasoningBank({ baseUrl: process.env.RB_URL, token: process.env.REASONINGBANK_TOKEN });
const marker = process.env.RB_MARKER;
const recorded = await bank.record({
  title: `Cache the dependency download ${marker}`, description: "When CI spends minutes on installs",
  content: "Cache the package manager's download folder keyed on the lock file.", outcome: "success",
  project: "web-app", anchors: [{ path: "./.github/workflows/ci.yml", line_start: 12, line_end: 20 }],
});
const hits = await bank.search({ query: `cache the dependency download ${marker}`, project: "web-app" });
const got = await bank.get(recorded.id);
const recalled = await bank.recall({ repository: "https://github.com/acme/shop", path: "ci/cache.yml" });
if (recalled.path !== "ci/cache.yml" || recalled.repository !== "github.com/acme/shop") {
  throw new Error(JSON.stringify(recalled));
}
let missing = "";
try { await bank.get(process.env.RB_OTHER); } catch (error) { if (error instanceof NotFound) missing = error.code; }
const anchors = got.anchors.map((a) => [a.path, a.line_start, a.line_end]);
const found = hits.memories.map((hit) => hit.id);
console.log(JSON.stringify({ id: recorded.id, found, title: got.title, missing, anchors }));
"""


@pytest.mark.cross_tenant("api-memory")
def test_the_typescript_client_records_searches_and_gets_under_node(service, admin_token, other_orgs_memory, tmp_path):
    if node_missing():
        pytest.skip("node is not installed: the TypeScript client's smoke run needs it (docs/sdks.md)")
    # the committed build, installed the way `npm install ./clients/typescript` installs it: a link
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "reasoningbank-client").symlink_to(TS_CLIENT)
    (tmp_path / "smoke.mjs").write_text(SMOKE)
    marker = unique("SDK-TS")
    env = {
        "PATH": "/usr/bin:/bin",
        "RB_URL": service.url,
        "REASONINGBANK_TOKEN": admin_token,
        "RB_MARKER": marker,
        "RB_OTHER": other_orgs_memory,
    }
    node = shutil.which("node")
    assert node is not None
    result = subprocess.run([node, "smoke.mjs"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["id"] in answer["found"] and answer["title"].endswith(marker)
    assert answer["missing"] == "not_found"
    assert answer["anchors"] == [[".github/workflows/ci.yml", 12, 20]]


PYTHON_EXAMPLES = sdk_examples("python")
TYPESCRIPT_EXAMPLES = sdk_examples("typescript")


@pytest.mark.parametrize("block", PYTHON_EXAMPLES, ids=module_name)
def test_each_python_example_of_the_sdk_docs_runs_against_the_live_service(service, acme, admin_token, block, tmp_path):
    """`rb_…` is acme's project token (default scopes: it needs no more), `rb_admin_…` a token with `admin`."""
    script = tmp_path / "example.py"
    script.write_text(with_service(block.code, service.url, acme.project_token, admin_token))
    env = {**os.environ, "PYTHONPATH": str(PYTHON_CLIENT)}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"docs/sdks.md:{block.line}\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize("block", TYPESCRIPT_EXAMPLES, ids=module_name)
def test_each_typescript_example_of_the_sdk_docs_runs_under_node_against_the_live_service(
    service, acme, admin_token, block, tmp_path
):
    if node_missing():
        pytest.skip("node is not installed: the TypeScript examples need it (docs/sdks.md)")
    replace = {"http://127.0.0.1:8000": service.url, '"rb_admin_…"': f'"{admin_token}"'}
    replace['"rb_…"'] = f'"{acme.project_token}"'
    files = typescript_workspace(tmp_path, [block], replace)
    compiled = tsc(tmp_path, files, emit=True)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    result = subprocess.run(
        [node_binary(), files[0].with_suffix(".mjs").name],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"docs/sdks.md:{block.line}\n{result.stdout}{result.stderr}"
