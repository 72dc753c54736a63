"""Declared interfaces (docs/architecture.md#app-interfaces): each app lists in its ``__init__.py`` the
modules other apps may import, and ``lint-imports`` fails on an import of any other module of an app
from outside it (the ``app_interfaces`` contract of ``reasoningbank/import_contracts.py``).

These tests hold the declarations to the code (every app declares one, every listed module exists) and
prove the contract is no paper tiger: it breaks on a forbidden import, in a small package tree run
through the real ``lint-imports`` and in the real import graph with one import added.

Files are read with ``ast`` and the graph is grimp's: nothing of the product is imported, no Django.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

from reasoningbank.import_contracts import (
    DeclarationError,
    declared_public_modules,
    fix_text,
    interfaces_check,
    package_init,
)

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACT_TYPE = "app_interfaces"


def importlinter_config() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def apps() -> list[str]:
    return list(importlinter_config()["root_packages"])


def interfaces_contract() -> dict[str, Any]:
    [contract] = [c for c in importlinter_config()["contracts"] if c["type"] == CONTRACT_TYPE]
    return contract


def declarations() -> dict[str, tuple[str, ...] | None]:
    return {app: declared_public_modules(package_init(app).read_text(encoding="utf-8"), app) for app in apps()}


def module_exists(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


# --- the real apps ----------------------------------------------------------------------------------------


def test_the_contract_is_configured_for_every_app() -> None:
    config = importlinter_config()
    assert f"{CONTRACT_TYPE}: reasoningbank.import_contracts.AppInterfacesContract" in config["contract_types"]
    assert "apps" not in interfaces_contract(), "the contract checks the root packages: every app, a new one too"


def test_every_app_declares_the_modules_other_apps_may_import() -> None:
    awaiting = set(interfaces_contract().get("awaiting_declaration", []))
    declared = declarations()
    undeclared = sorted(app for app, names in declared.items() if names is None and app not in awaiting)
    assert not undeclared, f"no PUBLIC_MODULES in their __init__.py: {undeclared}"
    # an allowance is temporary: once the app declares, the entry must go (lint-imports says so too)
    stale = sorted(app for app in awaiting if declared.get(app) is not None)
    assert not stale, f"declare PUBLIC_MODULES now; drop them from awaiting_declaration: {stale}"
    assert len([names for names in declared.values() if names is not None]) >= 5


def test_every_listed_module_exists() -> None:
    missing = [
        f"{app}: {name}" for app, names in declarations().items() for name in names or () if not module_exists(name)
    ]
    assert not missing, f"listed in PUBLIC_MODULES but no such module: {missing}"


def test_consolidation_reaches_memories_only_through_its_facades() -> None:
    declared = declarations()
    memories = declared["memories"]
    assert memories is not None
    assert set(memories) == {
        "memories.models",
        "memories.events",
        "memories.writes",
        "memories.reads",
        "memories.rules",
        "memories.pages",
    }, "memories' interface grew or shrank: update docs/architecture.md#app-interfaces with it"
    graph = grimp.build_graph(*apps(), cache_dir=None)
    reached = {
        imported
        for importer in graph.modules
        if importer.startswith("consolidation.")
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith("memories")
    }
    assert reached, "the graph lost consolidation's imports of memories"
    assert reached <= set(memories), sorted(reached - set(memories))


def test_the_real_graph_keeps_the_contract_and_breaks_it_with_one_reach_into_a_feature_package() -> None:
    graph = grimp.build_graph(*apps(), cache_dir=None)
    declared = declarations()
    assert interfaces_check(graph, declared).violations == []

    for importer, imported, line in [
        ("consolidation.phases.patterns", "memories.core.services", 7),
        ("webhooks.receivers", "reasoningbank.urls", 9),
        ("consolidation.runs", "memories.writes", 11),  # public: fine
    ]:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents=f"import {imported}")
    found = {(v.importer, v.imported, v.line_numbers) for v in interfaces_check(graph, declared).violations}
    assert found == {
        ("consolidation.phases.patterns", "memories.core.services", (7,)),
        ("webhooks.receivers", "reasoningbank.urls", (9,)),
    }


# --- the declaration is read, not run ----------------------------------------------------------------------


def test_a_declaration_is_read_from_the_literal_tuple() -> None:
    source = '"""doc"""\n#: public\nPUBLIC_MODULES: tuple[str, ...] = ("alpha.api", "alpha.models")\n'
    assert declared_public_modules(source, "alpha") == ("alpha.api", "alpha.models")
    assert declared_public_modules("PUBLIC_MODULES = ()\n", "alpha") == ()
    assert declared_public_modules('"""no declaration"""\n', "alpha") is None
    assert declared_public_modules("def f():\n    PUBLIC_MODULES = ('alpha.x',)\n", "alpha") is None


@pytest.mark.parametrize(
    "source",
    [
        "PUBLIC_MODULES = ('beta.api',)\n",  # another app's module
        "PUBLIC_MODULES = tuple(['alpha.api'])\n",  # not a literal
        "PUBLIC_MODULES = ['alpha.api']\n",  # not a tuple
        "PUBLIC_MODULES = (1,)\n",  # not names
    ],
)
def test_a_declaration_that_cannot_be_read_as_names_of_the_app_is_an_error(source: str) -> None:
    with pytest.raises(DeclarationError):
        declared_public_modules(source, "alpha")


def test_the_way_out_names_the_public_modules_and_the_declaration_to_edit() -> None:
    assert fix_text("memories", ("memories.models", "memories.reads")) == (
        "import it through memories' public modules: memories.models, memories.reads; "
        "or add it to PUBLIC_MODULES in memories/__init__.py (docs/architecture.md#app-interfaces)"
    )
    assert fix_text("webhooks", ()).startswith("import it through webhooks' public modules: none")


# --- the contract through the real lint-imports, on a small tree ------------------------------------------


def tree_write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def lint(root: Path, contract_options: str = "") -> subprocess.CompletedProcess[str]:
    (root / ".importlinter").write_text(
        textwrap.dedent(
            """\
            [importlinter]
            root_packages =
                alpha
                beta
            contract_types =
                app_interfaces: reasoningbank.import_contracts.AppInterfacesContract

            [importlinter:contract:interfaces]
            name = apps import each other only through their public modules
            type = app_interfaces
            """
        )
        + contract_options,
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "500", "NO_COLOR": "1"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", ".importlinter"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


TREE = {
    "alpha/__init__.py": 'PUBLIC_MODULES: tuple[str, ...] = ("alpha.api", "alpha.sub")\n',
    "alpha/api.py": "from alpha import internal\n",  # inside the app: free
    "alpha/internal.py": "VALUE = 1\n",
    "alpha/sub/__init__.py": "",
    "alpha/sub/deep.py": "VALUE = 2\n",
    "beta/__init__.py": "PUBLIC_MODULES: tuple[str, ...] = ()\n",
    "beta/user.py": "from alpha import api\nimport alpha.sub\n",  # public modules only
}


def test_lint_imports_keeps_the_contract_when_apps_import_only_public_modules(tmp_path: Path) -> None:
    tree_write(tmp_path, TREE)
    result = lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


def test_lint_imports_fails_on_an_import_of_a_private_module_and_names_the_way_out(tmp_path: Path) -> None:
    tree_write(tmp_path, {**TREE, "beta/user.py": "from alpha.api import VALUE\nfrom alpha.internal import VALUE\n"})
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = " ".join(result.stdout.split())
    assert "BROKEN" in out
    assert "beta.user imports alpha.internal (l.2), which is private to alpha." in out
    assert "import it through alpha's public modules: alpha.api, alpha.sub;" in out
    assert "or add it to PUBLIC_MODULES in alpha/__init__.py" in out
    assert "alpha.api imports" not in out  # the import inside alpha is no violation


def test_a_listed_package_opens_its_init_only(tmp_path: Path) -> None:
    tree_write(tmp_path, {**TREE, "beta/user.py": "from alpha.sub.deep import VALUE\n"})
    result = lint(tmp_path)
    assert result.returncode == 1
    assert "beta.user imports alpha.sub.deep (l.1), which is private to alpha." in " ".join(result.stdout.split())


def test_a_listed_module_that_does_not_exist_breaks_the_contract(tmp_path: Path) -> None:
    tree_write(tmp_path, {**TREE, "alpha/__init__.py": 'PUBLIC_MODULES = ("alpha.api", "alpha.gone")\n'})
    result = lint(tmp_path)
    assert result.returncode == 1
    assert "alpha/__init__.py lists modules that do not exist in PUBLIC_MODULES: alpha.gone" in " ".join(
        result.stdout.split()
    )


def test_an_app_without_a_declaration_breaks_the_contract_unless_it_is_awaited(tmp_path: Path) -> None:
    tree_write(tmp_path, {**TREE, "beta/__init__.py": "", "alpha/user.py": "from beta import user\n"})
    refused = lint(tmp_path)
    assert refused.returncode == 1
    assert "beta declares no PUBLIC_MODULES" in " ".join(refused.stdout.split())

    awaited = lint(tmp_path, "awaiting_declaration =\n    beta\n")
    assert awaited.returncode == 0, awaited.stdout
    assert "beta declares no PUBLIC_MODULES yet (awaiting_declaration)" in " ".join(awaited.stdout.split())

    # once it declares, the allowance is stale and says so
    tree_write(tmp_path, {"beta/__init__.py": 'PUBLIC_MODULES = ("beta.user",)\n'})
    stale = lint(tmp_path, "awaiting_declaration =\n    beta\n")
    assert stale.returncode == 1
    assert "beta declares PUBLIC_MODULES now: drop it from awaiting_declaration" in " ".join(stale.stdout.split())
