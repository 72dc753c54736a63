"""The code examples of docs/sdks.md, read the way tests/readme_blocks.py reads the README's blocks, and what
running them needs: the address and tokens they are written with, replaced by a test's, and a folder where
``import … from "reasoningbank-client"`` finds the committed client as ``npm install ./clients/typescript``
links it. Plain Python, no Django."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.clients.drift import ROOT, TS_CLIENT, node_tools
from tests.readme_blocks import Block, readme_blocks

SDK_DOCS = ROOT / "docs" / "sdks.md"
DOCS_URL = "http://127.0.0.1:8000"
DOCS_TOKEN = "rb_…"  # a project token with the default scopes
DOCS_ADMIN_TOKEN = "rb_admin_…"  # a token with the admin scope (the export, the import)


def sdk_examples(language: str) -> list[Block]:
    """The page's ``python`` or ``typescript`` blocks, in order."""
    return [block for block in readme_blocks(SDK_DOCS.read_text(encoding="utf-8")) if block.language == language]


def with_service(code: str, url: str, token: str, admin_token: str) -> str:
    return (
        code.replace(DOCS_URL, url)
        .replace(f'"{DOCS_ADMIN_TOKEN}"', f'"{admin_token}"')
        .replace(f'"{DOCS_TOKEN}"', f'"{token}"')
    )


def module_name(block: Block) -> str:
    return f"example_line_{block.line}"


def typescript_workspace(directory: Path, blocks: list[Block], replace: dict[str, str] | None = None) -> list[Path]:
    """The blocks as ES modules in ``directory``, beside a ``node_modules/reasoningbank-client`` link to the
    client (an install of the folder is such a link)."""
    (directory / "node_modules").mkdir(exist_ok=True)
    link = directory / "node_modules" / "reasoningbank-client"
    if not link.exists():
        link.symlink_to(TS_CLIENT)
    files = []
    for block in blocks:
        code = block.code
        for old, new in (replace or {}).items():
            code = code.replace(old, new)
        path = directory / f"{module_name(block)}.mts"
        path.write_text(code, encoding="utf-8")
        files.append(path)
    return files


def tsc(directory: Path, files: list[Path], *, emit: bool) -> subprocess.CompletedProcess[str]:
    """``tsc --strict`` on the examples, with Node's types (the client's dev tools have them); ``emit``
    writes ``.mjs`` beside each."""
    command = [str(node_tools() / "tsc"), "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext"]
    command += ["--moduleResolution", "nodenext", "--lib", "es2022,dom", "--types", "node"]
    command += ["--typeRoots", str(TS_CLIENT / "node_modules" / "@types")]
    command += ["--outDir", str(directory)] if emit else ["--noEmit"]
    return subprocess.run(
        command + [path.name for path in files], cwd=directory, capture_output=True, text=True, timeout=180
    )


def node_binary() -> str:
    found = shutil.which("node")
    assert found is not None
    return found
