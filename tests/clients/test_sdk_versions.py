"""Each SDK's version is written once (docs/sdks.md#versions): the Python client's in
``reasoningbank_client/version.py`` (pyproject.toml reads it, the User-Agent carries it), the TypeScript
client's in ``package.json`` (package-lock.json follows it, ``npm run build`` writes ``src/version.ts`` from
it). Any copy that differs, or the version written again elsewhere in a client's code, fails here."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from reasoningbank_client import __version__
from reasoningbank_client.client import USER_AGENT

from tests.clients.drift import PYTHON_CLIENT, TS_CLIENT

TS_VERSION_LINE = re.compile(r'^export const VERSION = "(?P<version>[^"]+)";$', re.MULTILINE)


def test_the_python_package_reads_its_version_from_the_one_constant():
    project = tomllib.loads((PYTHON_CLIENT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "write the version only in reasoningbank_client/version.py"
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "reasoningbank_client.version.__version__"}
    assert USER_AGENT == f"reasoningbank-client-python/{__version__}"


def package_version() -> str:
    version: str = json.loads((TS_CLIENT / "package.json").read_text(encoding="utf-8"))["version"]
    return version


def test_the_typescript_versions_are_package_jsons():
    version = package_version()
    lock = json.loads((TS_CLIENT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["version"] == lock["packages"][""]["version"] == version, "run npm install in clients/typescript"
    for built in (TS_CLIENT / "src" / "version.ts", TS_CLIENT / "dist" / "version.js"):
        found = TS_VERSION_LINE.search(built.read_text(encoding="utf-8"))
        assert found and found["version"] == version, (
            f"{built.name} is stale: run `npm run build` in clients/typescript"
        )


def literal_copies(files: list[Path], version: str, allowed: set[str]) -> list[str]:
    quoted = re.compile(rf"[\"'/]{re.escape(version)}[\"']")
    return [str(path) for path in files if path.name not in allowed and quoted.search(path.read_text(encoding="utf-8"))]


def test_no_client_source_writes_its_version_a_second_time():
    python = sorted((PYTHON_CLIENT / "reasoningbank_client").glob("*.py"))
    typescript = sorted((TS_CLIENT / "src").glob("*.ts")) + sorted((TS_CLIENT / "dist").glob("*.js"))
    assert literal_copies(python, __version__, {"version.py"}) == []
    assert literal_copies(typescript, package_version(), {"version.ts", "version.js"}) == []
