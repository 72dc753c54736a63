"""The README's fenced code blocks, read the way the quickstart test needs them.

The README is a quickstart whose commands are executed by the end-to-end suite
(tests/e2e/test_readme_quickstart.py), so that it cannot drift from the product. A block's info
string says what it is:

- ``sh`` / ``python``: run, in order, in one shell, as a new user would;
- ``sh no-run`` / ``python no-run``: not run here (it starts the service itself, needs a real LLM
  key or a client that is not installed); an HTML comment right before it, ``<!-- no-run: why -->``,
  says why, so that a reader of the Markdown sees it was left out on purpose;
- ``json output`` / ``text output``: what the runnable block before it prints, checked loosely (the
  keys of a JSON answer; the lines of a text one, numbers aside), never byte for byte;
- anything else (``json``, ``toml``: a client's configuration file) must at least parse.

Plain Python, no Django: the unit test of the README's shape and the end-to-end test both use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
RUNNABLE = ("sh", "python")
NO_RUN = "no-run"
OUTPUT = "output"
# the address the README uses; the test's service listens elsewhere
README_URL = "http://127.0.0.1:8000"

_FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>.*)$")
_NO_RUN_REASON = re.compile(r"^<!--\s*no-run:\s*(?P<why>\S.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    line: int  # where its opening fence is, 1-based
    info: tuple[str, ...]  # the info string's words: ("sh",), ("sh", "no-run"), ("json", "output")
    code: str
    no_run_reason: str  # the comment right before it, when it says "no-run: why"

    @property
    def language(self) -> str:
        return self.info[0] if self.info else ""

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE and NO_RUN not in self.info

    @property
    def marked_no_run(self) -> bool:
        return NO_RUN in self.info

    @property
    def is_output(self) -> bool:
        return OUTPUT in self.info[1:]

    def where(self) -> str:
        return f"README.md:{self.line} ({' '.join(self.info) or 'no info string'})"


def readme_blocks(text: str | None = None) -> list[Block]:
    """Every fenced block of the README, in order."""
    lines = (README.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence[0] * len(fence)):
            body.append(lines[j])
            j += 1
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        reason = _NO_RUN_REASON.match(before)
        blocks.append(
            Block(
                line=i + 1,
                info=tuple(opening["info"].split()),
                code="\n".join(body) + "\n",
                no_run_reason=reason["why"] if reason else "",
            )
        )
        i = j + 1
    return blocks


def expected_outputs(blocks: list[Block]) -> dict[int, list[Block]]:
    """The output blocks shown after each runnable block, by the runnable block's index in ``blocks``."""
    found: dict[int, list[Block]] = {}
    last_runnable: int | None = None
    for index, block in enumerate(blocks):
        if block.runnable:
            last_runnable = index
        elif block.is_output and last_runnable is not None:
            found.setdefault(last_runnable, []).append(block)
    return found
