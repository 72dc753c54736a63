"""No ``_private`` names across modules (a house rule): a name that starts with one underscore is its
module's own business. Product code — every first-party package, i.e. the ``root_packages`` of
``[tool.importlinter]`` in pyproject.toml (reasoningbank, accounts, memories, consolidation; a new app
is added there for its import contracts and is checked here from then on) — may not

* import one from another first-party module (``from memories.core.services import _embed``, or a
  relative ``from .clusters import _preview_sources``), nor
* use one as an attribute of an imported first-party module (``services._embed`` after
  ``from memories.core import services``).

When two modules need the same helper it gets a public name (``memories/embedding.py``'s
``embed_texts``). What this does not cover, on purpose:

* tests: a test may reach into the module it tests (``monkeypatch.setattr(writer.ImportWriter, "_use",
  …)``) — the rule is about the product's own seams;
* private *module* paths (a helper module under ``management/commands/`` named ``_base``):
  the underscore there keeps a helper from being a management command, and the name imported is public;
* other libraries' names (Django's documented ``Model._meta``, a pinned library's internals): only
  imports of first-party modules are read.

The sources are read with ``ast`` (nothing is imported), so the check is quick and needs no database.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"migrations", "__pycache__"}


def product_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["root_packages"])


def product_files() -> list[Path]:
    return sorted(
        path
        for package in product_packages()
        for path in (ROOT / package).rglob("*.py")
        if not SKIPPED_DIRS & set(path.relative_to(ROOT).parts)
    )


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module ``from … import`` reads from, with a relative import resolved against the importer."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def private_uses(source: str, *, importer: str, packages: list[str], is_package: bool = False) -> Iterator[str]:
    """``line: what`` for each private first-party name ``source`` imports or reads off a module."""
    tree = ast.parse(source)
    first_party = tuple(packages)
    module_aliases: dict[str, str] = {}  # local name → first-party module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(node, importer, is_package)
            if not (node.level or origin.split(".")[0] in first_party):
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    yield f"{node.lineno}: from {origin} import {alias.name}"
                elif _is_module(f"{origin}.{alias.name}"):
                    module_aliases[alias.asname or alias.name] = f"{origin}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in first_party:
                    # ``import a.b`` binds ``a``; ``import a.b as c`` binds the module ``a.b``
                    local = alias.asname or alias.name.split(".")[0]
                    module_aliases[local] = alias.name if alias.asname else local
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in module_aliases:
                yield f"{node.lineno}: {module_aliases[owner.id]}.{node.attr}"


def test_no_product_module_imports_a_private_name_of_another_module() -> None:
    packages = product_packages()
    files = product_files()
    assert len(files) > 100, "the product's modules were not found"
    found = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in files
        for use in private_uses(
            path.read_text(encoding="utf-8"),
            importer=module_name(path),
            packages=packages,
            is_package=path.name == "__init__.py",
        )
    ]
    assert not found, (
        "private names used across modules; give the name a public one where it lives (or move it to a "
        "shared module) instead:\n  " + "\n  ".join(found)
    )


# --- the scanner cannot pass vacuously ---------------------------------------------------------------------

PACKAGES = ["memories", "consolidation"]


def uses(source: str, importer: str = "consolidation.phases.patterns", **kwargs: bool) -> list[str]:
    return list(private_uses(source, importer=importer, packages=PACKAGES, **kwargs))


def test_the_scanner_reports_a_private_name_imported_from_a_first_party_module() -> None:
    source = "from memories.embedding import embed_texts\nfrom memories.core.services import MemoryDraft, _draft\n"
    assert uses(source) == ["2: from memories.core.services import _draft"]


def test_the_scanner_resolves_relative_imports_against_the_importing_module() -> None:
    assert uses("from .clusters import _preview\n") == ["1: from consolidation.phases.clusters import _preview"]
    assert uses("from . import _shared\n", importer="consolidation.phases", is_package=True) == [
        "1: from consolidation.phases import _shared"
    ]


def test_the_scanner_reports_a_private_attribute_of_an_imported_first_party_module() -> None:
    source = (
        "import memories.core.services as core_services\n"
        "from memories import models\n"
        "a = core_services._embed\n"
        "b = models._new_id('mem')\n"
    )
    assert uses(source) == ["3: memories.core.services._embed", "4: memories.models._new_id"]


def test_the_scanner_leaves_dunders_private_module_paths_classes_and_other_libraries_alone() -> None:
    source = (
        "from __future__ import annotations\n"
        "from memories.models import Memory\n"
        "from consolidation.management.commands._base import organization_by_slug\n"
        "from oauth2_provider import cimd\n"
        "import django\n"
        "fields = Memory._meta.get_fields()\n"
        "ok = cimd._ip_is_public\n"
        "version = django.__version__\n"
    )
    assert uses(source) == []
