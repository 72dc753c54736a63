"""accounts' declared interface (``accounts.PUBLIC_MODULES``, docs/architecture.md#app-interfaces): the other
apps and the composition import only the modules it lists, every listed module exists, and the list stays
small. accounts itself, the tests, the scripts and the benchmarks may import anything.

Pure file reading, no Django."""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

from accounts import PUBLIC_MODULES
from tests.repo_files import REPO, is_python, repo_files

# the other apps, the kernel and the composition: every root package of the import contracts but accounts
ROOTS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["root_packages"]
OUTSIDE = tuple(f"{root}/" for root in ROOTS if root != "accounts")


def accounts_imports(path: Path) -> list[tuple[str, int]]:
    """The ``accounts`` modules a file imports, with their lines (``from accounts import events`` is
    ``accounts.events``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "accounts":
                found += [(f"accounts.{alias.name}", node.lineno) for alias in node.names]
            elif node.module.startswith("accounts."):
                found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.split(".")[0] == "accounts"]
    return found


def test_other_apps_import_only_the_modules_accounts_declares_public() -> None:
    outside = [
        path for path in repo_files() if is_python(path) and path.relative_to(REPO).as_posix().startswith(OUTSIDE)
    ]
    assert any(path.relative_to(REPO).as_posix().startswith("memories/") for path in outside)
    private = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in outside
        for module, line in accounts_imports(path)
        if module not in PUBLIC_MODULES
    ]
    assert not private, "import one of accounts.PUBLIC_MODULES instead (or declare the module): " + "; ".join(private)


def test_every_public_module_exists_and_the_list_stays_small() -> None:
    missing = [name for name in PUBLIC_MODULES if importlib.util.find_spec(name) is None]
    assert not missing, f"declared public but not there: {missing}"
    assert len(set(PUBLIC_MODULES)) == len(PUBLIC_MODULES)
    # a facade grows by a name, not by another module: the interface is the few modules a reader learns
    assert len(PUBLIC_MODULES) <= 10
