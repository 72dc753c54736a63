"""The README's quickstart, executed: its shell and Python blocks run in order in one shell beside
run.sh, as a new user would type them — create the organization and token, record with curl, search
with curl, the MCP SDK example — against the live service. The README's address is replaced by the
service's own (it listens on a free port with its own data directory); nothing else is changed.

Blocks the README marks ``no-run`` (starting the service, which the fixture did; a real LLM key; the
claude CLI) are left out; tests/test_readme.py checks that every other block is run here. What the
README shows as output is compared loosely: the keys of a JSON answer, the lines of a text one with
numbers left free.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import PYTHON, REPO, Service
from tests.readme_blocks import README_URL, Block, expected_outputs, readme_blocks

pytestmark = pytest.mark.timeout(600)
_MARK = "@@readme-block {index}@@"
_MARK_RE = re.compile(r"^@@readme-block (\d+)@@$", re.MULTILINE)


def _script(blocks: list[Block], service: Service, workdir: Path) -> str:
    """One bash script: every runnable block in order, a marker line before each so that the
    output can be told apart; a Python block runs with the project's interpreter, as the README says."""
    parts = ["set -eo pipefail"]
    for index, block in enumerate(blocks):
        if not block.runnable:
            continue
        code = block.code.replace(README_URL, service.url)
        parts.append(f"printf '\\n{_MARK.format(index=index)}\\n'")
        if block.language == "python":
            path = workdir / f"readme_block_{index}.py"
            path.write_text(code)
            parts.append(f"{PYTHON} {path}")
        else:
            parts.append(code)
    return "\n".join(parts) + "\n"


def _outputs(stdout: str) -> dict[int, str]:
    pieces = _MARK_RE.split(stdout)
    return {int(pieces[i]): pieces[i + 1].strip() for i in range(1, len(pieces) - 1, 2)}


def _keys_missing(expected: Any, actual: Any, path: str = "") -> list[str]:
    """The keys the README shows that the real answer lacks (values are not compared)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or 'the answer'} is not an object"]
        missing = [f"{path}{key}" for key in expected if key not in actual]
        for key, value in expected.items():
            if key in actual:
                missing += _keys_missing(value, actual[key], f"{path}{key}.")
        return missing
    if isinstance(expected, list) and expected:
        if not isinstance(actual, list) or not actual:
            return [f"{path.rstrip('.')} is empty"]
        return _keys_missing(expected[0], actual[0], f"{path}0.")
    return []


def _line_pattern(line: str) -> re.Pattern[str]:
    """A line of shown text output, with every number free (relevance and confidence vary)."""
    parts = re.split(r"\d+(?:\.\d+)?", line.strip())
    return re.compile(r"\d+(?:\.\d+)?".join(re.escape(part) for part in parts))


def _check_shown_output(shown: Block, actual: str) -> list[str]:
    if shown.language == "json":
        try:
            answer = json.loads(actual)
        except json.JSONDecodeError:
            return [f"{shown.where()}: the block before it printed no JSON:\n{actual[:2000]}"]
        missing = _keys_missing(json.loads(shown.code), answer)
        return [f"{shown.where()}: the answer lacks {missing}:\n{actual[:2000]}"] if missing else []
    lines = actual.splitlines()
    return [
        f"{shown.where()}: no line like {line!r} in:\n{actual[:2000]}"
        for line in shown.code.splitlines()
        if line.strip() and not any(_line_pattern(line).fullmatch(got.strip()) for got in lines)
    ]


def _is_error_answer(output: str) -> bool:
    """The API's error shape: a curl that printed it got a 4xx or 5xx (curl -s still exits 0)."""
    try:
        body = json.loads(output)
    except json.JSONDecodeError:
        return False
    return isinstance(body, dict) and {"detail", "code"} <= body.keys()


def _block_with(blocks: list[Block], *needles: str, language: str = "sh") -> int:
    found = [
        i for i, b in enumerate(blocks) if b.runnable and b.language == language and all(n in b.code for n in needles)
    ]
    assert len(found) == 1, f"expected one runnable {language} block with {needles}, found {len(found)}"
    return found[0]


def test_the_readme_quickstart_runs_as_written_against_the_service(service: Service) -> None:
    blocks = readme_blocks()
    with tempfile.TemporaryDirectory(prefix="rb-readme-") as tmp:
        script = _script(blocks, service, Path(tmp))
        # a second shell beside run.sh: the service's data directory, nothing else of its settings
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=REPO,
            env=service.shell_env(),
            capture_output=True,
            text=True,
            timeout=480,
            check=False,
        )
    outputs = _outputs(done.stdout)
    if done.returncode != 0:
        last = max(outputs, default=None)
        where = blocks[last].where() if last is not None else "before the first block"
        pytest.fail(
            f"the quickstart stopped at {where} (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    ran = [i for i, block in enumerate(blocks) if block.runnable]
    assert sorted(outputs) == ran, "every runnable block printed its marker"

    problems = [
        f"{blocks[i].where()}: an error answer:\n{outputs[i][:2000]}" for i in ran if _is_error_answer(outputs[i])
    ]
    for index, shown in expected_outputs(blocks).items():
        for block in shown:
            problems += _check_shown_output(block, outputs[index])
    assert not problems, "\n\n".join(problems)

    # and what a new user is after: the memory just recorded is what the searches find
    recorded = json.loads(outputs[_block_with(blocks, "/api/v1/memories \\")])
    found = json.loads(outputs[_block_with(blocks, "/api/v1/memories/search")])
    assert recorded["id"] in [hit["id"] for hit in found["memories"]]
    sdk = outputs[_block_with(blocks, "streamable_http_client", language="python")]
    assert "memory_search" in sdk and recorded["memory"]["title"] in sdk


def test_the_readme_sdk_example_names_the_reason_when_the_token_is_refused(service: Service) -> None:
    """The example's response hook is how a user learns why: the SDK itself says only "Server
    returned an error response"."""
    blocks = readme_blocks()
    example = blocks[_block_with(blocks, "streamable_http_client", language="python")]
    with tempfile.TemporaryDirectory(prefix="rb-readme-") as tmp:
        path = Path(tmp) / "sdk_example.py"
        path.write_text(example.code.replace(README_URL, service.url))
        done = subprocess.run(
            [str(PYTHON), str(path)],
            cwd=REPO,
            env={**service.shell_env(), "REASONINGBANK_TOKEN": "rb_" + "x" * 43},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode != 0
    assert re.search(r"^401 .*token", done.stdout, re.MULTILINE | re.IGNORECASE), done.stdout + done.stderr[-2000:]
