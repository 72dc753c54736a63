"""The declared-interfaces rule as an import-linter contract type (docs/architecture.md#app-interfaces).

Each app says in its ``__init__.py`` which of its modules other apps may import::

    PUBLIC_MODULES: tuple[str, ...] = ("memories.models", "memories.events", ...)

``AppInterfacesContract`` (``type = "app_interfaces"`` in pyproject.toml's ``[tool.importlinter]``) fails
``lint-imports`` on any import, by a module of one app, of a module of another app that is not in that
app's list. Names are exact: ``memories.models`` allows that module and nothing below it, and a package
in the list allows its ``__init__`` only. Imports inside an app are free; tests, scripts and bench are
not apps and may import anything.

The declarations are read with ``ast`` from each app's ``__init__.py``, never imported: the check runs
without Django. A developer tool: import-linter is a dev dependency, and only ``lint-imports`` and the
tests load this module.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

DECLARATION = "PUBLIC_MODULES"


class DeclarationError(ValueError):
    """An app's ``PUBLIC_MODULES`` is not a literal tuple of module names of that app."""


def declared_public_modules(source: str, app: str) -> tuple[str, ...] | None:
    """The ``PUBLIC_MODULES`` tuple a package's ``__init__`` source declares at module level, or None when
    it declares none. A name outside ``app``, or a value that is not a literal tuple of strings, is an
    error: the declaration must be readable without running the code."""
    for node in ast.parse(source).body:
        targets: list[ast.expr]
        if isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        else:
            continue
        if not any(isinstance(target, ast.Name) and target.id == DECLARATION for target in targets):
            continue
        try:
            names = ast.literal_eval(value) if value is not None else None
        except ValueError as error:
            raise DeclarationError(f"{app}.{DECLARATION} must be a literal tuple of module names") from error
        if not isinstance(names, tuple) or not all(isinstance(name, str) for name in names):
            raise DeclarationError(f"{app}.{DECLARATION} must be a tuple of module names (strings)")
        strangers = [name for name in names if name != app and not name.startswith(app + ".")]
        if strangers:
            raise DeclarationError(f"{app}.{DECLARATION} names modules of another package: {strangers}")
        return names
    return None


def package_init(package: str) -> Path:
    """The ``__init__.py`` of a top-level package on ``sys.path``, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None or not spec.origin.endswith("__init__.py"):
        raise DeclarationError(f"{package} is not a package with an __init__.py")
    return Path(spec.origin)


def app_of(module: str) -> str:
    return module.split(".", 1)[0]


@dataclass
class Violation:
    importer: str
    imported: str
    line_numbers: tuple[int | None, ...]


@dataclass
class Interfaces:
    """What each app declares (None: not declared yet) and what the check found."""

    declared: dict[str, tuple[str, ...] | None]
    violations: list[Violation] = field(default_factory=list)
    missing: dict[str, list[str]] = field(default_factory=dict)  # app → listed names with no such module
    undeclared: list[str] = field(default_factory=list)  # apps without a declaration, not awaited
    stale: list[str] = field(default_factory=list)  # awaited apps that declare now


def interfaces_check(graph: ImportGraph, declared: dict[str, tuple[str, ...] | None]) -> Interfaces:
    """Every direct import in ``graph`` from one app into another app's undeclared module, and every
    listed name that is no module. An app whose declaration is None is not checked (it has not said what
    it offers yet); the contract decides whether that is allowed."""
    result = Interfaces(declared=declared)
    modules = graph.modules
    for app, names in declared.items():
        if names is not None:
            unknown = sorted(name for name in names if name not in modules)
            if unknown:
                result.missing[app] = unknown
    for imported in sorted(modules):
        owner = app_of(imported)
        public = declared.get(owner)
        if public is None or imported in public:
            continue
        for importer in sorted(graph.find_modules_that_directly_import(imported)):
            if app_of(importer) == owner or app_of(importer) not in declared:
                continue
            details = graph.get_import_details(importer=importer, imported=imported)
            lines = tuple(detail["line_number"] for detail in details)
            result.violations.append(Violation(importer, imported, lines))
    return result


def fix_text(app: str, public: tuple[str, ...]) -> str:
    """The way out of a violation, named."""
    offered = ", ".join(public) if public else "none (nothing of it is for other apps)"
    owner = f"{app}'" if app.endswith("s") else f"{app}'s"
    return (
        f"import it through {owner} public modules: {offered}; "
        f"or add it to {DECLARATION} in {app}/__init__.py (docs/architecture.md#app-interfaces)"
    )


class AppInterfacesContract(Contract):
    """Apps import each other only through the modules each declares in ``PUBLIC_MODULES``.

    Configuration options:
        - apps: the top-level packages that are apps (optional; the ``root_packages`` by default).
        - awaiting_declaration: apps that have not declared yet (optional): not checked until they do.
          Any other app without a declaration breaks the contract, and so does an app in this list
          that declares (the entry is stale: drop it).
    """

    type_name = "app_interfaces"

    apps = fields.ListField(subfield=fields.StringField(), required=False)
    awaiting_declaration = fields.ListField(subfield=fields.StringField(), required=False)

    def app_names(self) -> list[str]:
        names: Any = self.apps or self.session_options.get("root_packages") or []
        return [str(name) for name in names]

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        declared: dict[str, tuple[str, ...] | None] = {}
        for app in self.app_names():
            path = package_init(app)
            declared[app] = declared_public_modules(path.read_text(encoding="utf-8"), app)
        result = interfaces_check(graph, declared)
        awaited: Any = self.awaiting_declaration or []
        awaiting = {str(app) for app in awaited}
        result.undeclared = sorted(app for app, names in declared.items() if names is None and app not in awaiting)
        result.stale = sorted(app for app in awaiting if declared.get(app) is not None)
        warnings = [
            f"{app} declares no {DECLARATION} yet (awaiting_declaration): every module of it may be imported"
            for app in sorted(awaiting)
            if app in declared and declared[app] is None
        ]
        return ContractCheck(
            kept=not (result.violations or result.missing or result.undeclared or result.stale),
            warnings=warnings,
            metadata={"result": result},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        result: Interfaces = check.metadata["result"]
        for app in result.undeclared:
            output.print_error(
                f"{app} declares no {DECLARATION}: list in {app}/__init__.py the modules other apps may import "
                "(an empty tuple when none)",
                bold=False,
            )
            output.new_line()
        for app in result.stale:
            output.print_error(
                f"{app} declares {DECLARATION} now: drop it from awaiting_declaration in pyproject.toml",
                bold=False,
            )
            output.new_line()
        for app, names in sorted(result.missing.items()):
            output.print_error(
                f"{app}/__init__.py lists modules that do not exist in {DECLARATION}: {', '.join(names)} "
                "(drop them, or correct the names)",
                bold=False,
            )
            output.new_line()
        for violation in result.violations:
            owner = app_of(violation.imported)
            lines = ", ".join(f"l.{line}" for line in violation.line_numbers if line is not None)
            output.print_error(
                f"{violation.importer} imports {violation.imported}{f' ({lines})' if lines else ''}, "
                f"which is private to {owner}.",
                bold=False,
            )
            output.indent_cursor()
            output.print_error(f"Fix: {fix_text(owner, result.declared[owner] or ())}.", bold=False)
            output.new_line()
