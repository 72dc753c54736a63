"""The README stays a quickstart whose every command is either run by the end-to-end suite
(tests/e2e/test_readme_quickstart.py) or marked, with its reason, as not run."""

from __future__ import annotations

import json
import tomllib

from tests.readme_blocks import README, expected_outputs, readme_blocks

# fence languages a reader would run; the test knows only "sh" and "python", so any other spelling
# of a shell or of Python would slip past it
_SHELL_OR_PYTHON_ALIASES = {"bash", "shell", "console", "zsh", "shell-session", "py", "python3", "pycon"}


def test_the_readme_is_a_quickstart_of_at_most_250_lines() -> None:
    assert len(README.read_text().splitlines()) <= 250


def test_every_shell_and_python_block_is_run_or_says_why_it_is_not() -> None:
    problems = []
    for block in readme_blocks():
        if block.language in _SHELL_OR_PYTHON_ALIASES:
            problems.append(f"{block.where()}: write ```sh or ```python, which the README test runs")
        elif block.marked_no_run and not block.no_run_reason:
            problems.append(f"{block.where()}: a no-run block needs '<!-- no-run: why -->' right before it")
        elif block.no_run_reason and not block.marked_no_run:
            problems.append(f"{block.where()}: the comment says no-run but the info string does not")
    assert not problems, "\n".join(problems)


def test_the_readme_has_runnable_shell_and_python_blocks() -> None:
    languages = {block.language for block in readme_blocks() if block.runnable}
    assert languages == {"sh", "python"}


def test_every_output_block_follows_a_block_that_runs() -> None:
    blocks = readme_blocks()
    attached = {id(out) for outs in expected_outputs(blocks).values() for out in outs}
    orphans = [block.where() for block in blocks if block.is_output and id(block) not in attached]
    assert not orphans, f"output shown after no runnable block: {orphans}"


def test_json_and_toml_blocks_parse() -> None:
    for block in readme_blocks():
        if block.language == "json":
            json.loads(block.code)
        elif block.language == "toml":
            tomllib.loads(block.code)


def test_a_block_is_read_with_its_info_string_and_the_reason_before_it() -> None:
    text = (
        "Intro\n\n<!-- no-run: needs the claude CLI -->\n```sh no-run\nclaude mcp add x\n```\n\n"
        '```sh\ncurl -s http://127.0.0.1:8000/api/v1/me\n```\n\n```json output\n{"a": 1}\n```\n'
    )
    blocks = readme_blocks(text)
    assert [(b.line, b.info, b.no_run_reason) for b in blocks] == [
        (4, ("sh", "no-run"), "needs the claude CLI"),
        (8, ("sh",), ""),
        (12, ("json", "output"), ""),
    ]
    assert blocks[0].marked_no_run and not blocks[0].runnable
    assert blocks[1].runnable and blocks[1].code == "curl -s http://127.0.0.1:8000/api/v1/me\n"
    assert expected_outputs(blocks) == {1: [blocks[2]]}
