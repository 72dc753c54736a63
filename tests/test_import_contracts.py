"""The import-linter contracts (pyproject.toml) name modules in lists that import-linter cannot compute;
these tests hold the lists to the code, so a new module cannot slip past a contract unnoticed:

* the "pure logic" contract lists exactly the modules that declare themselves Django-free with a
  module-level ``__pure__ = True`` (the one source of truth: the module says what it is);
* every module of ``reasoningbank/`` is either in the kernel contract or one of the composition
  modules that contract forbids it to import.

The sources are read with ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PURE_CONTRACT = "pure logic is free of Django (unit-tested without a database)"
KERNEL_CONTRACT = "the shared kernel imports no app and not the composition"
MARKER = "__pure__"


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {contract["name"]: contract for contract in config["contracts"]}


def root_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return list(config["root_packages"])


def modules_of(package: str) -> dict[str, Path]:
    """Every module of ``package`` (dotted name → file), migrations left out; a package is its __init__."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts:
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def declares_pure(source: str) -> bool:
    """A module-level ``__pure__ = True``."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == MARKER for target in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is True
        ):
            return True
    return False


def marked_pure() -> set[str]:
    return {
        name
        for package in root_packages()
        for name, path in modules_of(package).items()
        if declares_pure(path.read_text(encoding="utf-8"))
    }


def covered_by(name: str, listed: set[str]) -> bool:
    """``name`` is listed, or lies inside a listed package (import-linter checks a package's descendants)."""
    return any(name == entry or name.startswith(entry + ".") for entry in listed)


def test_the_pure_contract_lists_exactly_the_modules_that_declare_themselves_pure() -> None:
    listed = set(contracts()[PURE_CONTRACT]["source_modules"])
    marked = marked_pure()
    assert marked, "no module declares __pure__ = True"
    assert not marked - listed, f"declare __pure__ but are not in the pure contract: {sorted(marked - listed)}"
    assert not listed - marked, (
        f"in the pure contract without declaring __pure__ = True (add it, or drop them): {sorted(listed - marked)}"
    )


def test_every_kernel_module_is_in_the_kernel_contract_or_is_the_composition() -> None:
    kernel = contracts()[KERNEL_CONTRACT]
    sources = set(kernel["source_modules"])
    composition = {name for name in kernel["forbidden_modules"] if name.startswith("reasoningbank.")}
    stray = [
        name
        for name in modules_of("reasoningbank")
        if name != "reasoningbank"
        and not name.startswith("reasoningbank.management")  # commands: entry points, like the composition
        and not covered_by(name, sources | composition)
    ]
    assert not stray, f"neither kernel (source_modules of {KERNEL_CONTRACT!r}) nor composition: {stray}"


def test_the_composition_is_only_what_assembles_the_service() -> None:
    """The kernel may import none of these; they are the only modules of reasoningbank/ that import the
    apps. The operator's pages and reads that gather every app's data are an app of their own
    (system/), not more composition."""
    kernel = contracts()[KERNEL_CONTRACT]
    composition = {name for name in kernel["forbidden_modules"] if name.startswith("reasoningbank.")}
    assert composition == {
        "reasoningbank.settings",
        "reasoningbank.urls",
        "reasoningbank.asgi",
        "reasoningbank.wsgi",
        "reasoningbank.mcp_server",
    }
    assert "system" in kernel["forbidden_modules"]


def test_the_marker_is_read_from_the_module_itself() -> None:
    assert declares_pure('"""doc"""\nfrom __future__ import annotations\n\n__pure__ = True\n')
    assert not declares_pure("__pure__ = False\n")
    assert not declares_pure("def f():\n    __pure__ = True\n")  # only a module-level statement counts
