"""No dead names: every module-level function, class and constant of the repository (product code, tests,
the bench, the scripts) is used somewhere. A dead name misleads whoever reads it: it looks like a feature,
a rule or a setting that the code follows, and it is not.

vulture finds the names no Python code refers to. A name that appears anywhere else in the repository's
code or configuration (a dotted path in settings, a template, a task name in a schedule, a string in a
test) counts as used: frameworks find those by name. So do the names frameworks find by convention,
listed below with the reason.

Pure file reading, no Django, no database."""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import cache
from pathlib import Path

from vulture import Vulture

from tests.repo_files import REPO, SKIPPED_DIRS, python_modules, repo_files

# Django reads every upper-case name of the settings package by name
SKIPPED = ("reasoningbank/settings/",)
# names the frameworks look up by convention: a URL namespace, pytest's hooks
CONVENTIONAL_NAMES = ["app_name", "urlpatterns", "pytest_*"]
# decorators that register what they decorate (the admin, the MCP tool modules, the consolidation phases,
# fixtures, signals, tags)
REGISTERING_DECORATORS = [
    "@admin.register",
    "@register_tool_module",
    "@phase_register",
    "@pytest.fixture",
    "@receiver",
    "@register.*",
]
# base classes whose subclasses are found by the framework: Django's app configs, drf-spectacular's
# extensions (OpenApiSerializerExtension, OpenApiAuthenticationExtension, ...)
REGISTERING_BASES = re.compile(r"(^|\.)(AppConfig|OpenApi\w*Extension)$")
# where a name may be referred to by a string; prose (*.md) does not keep code alive
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REFERRING_SUFFIXES = frozenset({".py", ".html", ".js", ".toml", ".sh", ".yaml", ".yml", ".json", ".cfg", ".ini", ""})


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text())


def _defined_at_module_level(path: str, line: int, name: str) -> ast.stmt | None:
    """The module-level statement at ``line`` that defines ``name`` (None for a method, a class attribute,
    a local variable)."""
    for node in _tree(path).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        if line not in (first, node.lineno):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return node if node.name == name else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = {n.id for target in targets if target is not None for n in ast.walk(target) if isinstance(n, ast.Name)}
        return node if name in names else None
    return None


def _registered_by_base(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and any(REGISTERING_BASES.search(ast.unparse(b)) for b in node.bases)


def dead_names(root: Path, modules: list[Path], referring: list[Path]) -> list[str]:
    """``path:line kind name`` of every dead module-level name of ``modules``; ``referring`` are the files
    whose text may name them."""
    vulture = Vulture(ignore_names=CONVENTIONAL_NAMES, ignore_decorators=REGISTERING_DECORATORS)
    vulture.scavenge([str(path) for path in modules])
    mentions = Counter(
        word
        for path in referring
        if path.suffix in REFERRING_SUFFIXES
        for word in IDENTIFIER.findall(path.read_text(errors="replace"))
    )
    dead = []
    for item in vulture.get_unused_code(min_confidence=60):
        if item.typ not in ("function", "class", "variable"):
            continue  # methods, attributes, arguments: the frameworks call and read those by name
        node = _defined_at_module_level(str(item.filename), item.first_lineno, item.name)
        if node is None or _registered_by_base(node):
            continue
        if mentions[item.name] <= 1:  # its own definition only
            dead.append(f"{Path(item.filename).relative_to(root)}:{item.first_lineno} {item.typ} {item.name}")
    return sorted(dead)


def test_the_check_finds_what_nothing_uses_and_only_that(tmp_path: Path) -> None:
    (tmp_path / "kinds.py").write_text(
        "from django.apps import AppConfig\n"
        "USED_BY_CODE = 1\n"
        "USED_BY_A_SETTING = 2\n"
        "NEVER_USED = 3\n"
        "class KindsConfig(AppConfig):\n"
        "    name = 'kinds'\n"
        "def helper_nobody_calls():\n"
        "    return USED_BY_CODE\n"
    )
    (tmp_path / "user.py").write_text("from kinds import USED_BY_CODE\nprint(USED_BY_CODE)\n")
    (tmp_path / "settings.toml").write_text('hook = "kinds.USED_BY_A_SETTING"\n')
    (tmp_path / "notes.md").write_text("NEVER_USED is mentioned in prose only.\n")
    files = sorted(tmp_path.iterdir())
    modules = [path for path in files if path.suffix == ".py"]
    assert dead_names(tmp_path, modules, files) == [
        "kinds.py:4 variable NEVER_USED",
        "kinds.py:7 function helper_nobody_calls",
    ]


def test_no_module_level_name_is_dead() -> None:
    modules = [path for path in python_modules() if not str(path.relative_to(REPO)).startswith(SKIPPED)]
    # migrations define nothing to check (Django writes them) but their imports use code: the schema
    # operations of reasoningbank/sharding.py are used by migrations only
    dead = dead_names(REPO, modules, repo_files(SKIPPED_DIRS - {"migrations"}))
    assert not dead, "remove these (or use them): " + "; ".join(dead)
