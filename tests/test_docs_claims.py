"""The checkable claims of the pages that say how the code is cut (docs/architecture.md, docs/contributing.md,
docs/decisions.md and the docs index, docs/README.md), held to the code, so that a page cannot go stale
while the code moves:

* the apps are one set: the first-party packages of ``INSTALLED_APPS`` are import-linter's root packages;
* every app is a box of both diagrams of the architecture page, an entry of its "Where things are" tree,
  and is named in the index's line for that page; every page of docs/ is in the index;
* every import from one box of the diagram into another is an arrow of the diagram (the composition's
  modules are the kernel contract's forbidden ones and the ``manage.py`` commands);
* every module that says ``__pure__ = True`` imports no Django, directly or through other modules (read
  from the markers themselves, not from a list that could drift), and what the tree calls pure says so;
* every path of the architecture page exists, its schedule table is ``schedule_specs()``, and every
  function or class the two pages name in code is defined in the repository.

The sources are read, not imported (grimp parses the import statements); Django's settings are read for
``INSTALLED_APPS`` only: no database.
"""

from __future__ import annotations

import ast
import builtins
import re
import tomllib
from functools import cache
from itertools import pairwise
from pathlib import Path

import grimp
import pytest

from reasoningbank.schedules import schedule_specs
from tests.repo_files import REPO, first_party_apps, python_modules

DOCS = REPO / "docs"
ARCHITECTURE = DOCS / "architecture.md"
KERNEL_CONTRACT = "the shared kernel imports no app and not the composition"
# what a pure module may not reach: the framework, and the apps' models (the pure contract's list)
DJANGO = ("django", "rest_framework")
MODELS = re.compile(r"^\w+\.models$")


def importlinter() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def apps() -> list[str]:
    """The apps the pages describe one by one: every first-party package but the project package
    (``reasoningbank/``: the kernel and the composition)."""
    return sorted(name for name in first_party_apps() if name != "reasoningbank")


def composition() -> set[str]:
    """The modules of reasoningbank/ that assemble the service: those the kernel contract forbids the kernel
    to import, and the manage.py commands (entry points, like the composition)."""
    kernel = next(c for c in importlinter()["contracts"] if c["name"] == KERNEL_CONTRACT)
    return {name for name in kernel["forbidden_modules"] if name.startswith("reasoningbank.")} | {
        "reasoningbank.management"
    }


def box_of(module: str) -> str:
    """The diagram's box a module belongs to: an app, the kernel or the composition."""
    top = module.split(".")[0]
    if top != "reasoningbank":
        return top
    inside = any(module == name or module.startswith(name + ".") for name in composition())
    return "composition" if inside else "kernel"


@cache
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*sorted(first_party_apps()), include_external_packages=True)


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


# --- the diagrams ---------------------------------------------------------------------------------------


def mermaid_boxes_and_arrows(text: str) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """The architecture page's first mermaid diagram: its boxes (node id → the box it draws: a package
    named in the label as ``(name/)``, or "kernel" / "composition" by the label's first word) and its
    arrows between boxes."""
    (diagram, *_) = fenced(text, "mermaid")
    boxes: dict[str, str] = {}
    for node, label in re.findall(r'^\s*(\w+)\["([^"]*)"\]', diagram, flags=re.M):
        first_word = re.match(r"\w*", label).group()  # type: ignore[union-attr]
        named = re.search(r"\((\w+)/\)", label)
        boxes[node] = first_word if first_word in ("kernel", "composition") else named.group(1) if named else label
    arrows = set()
    for line in diagram.splitlines():
        chain = [part.strip() for part in line.split("-->")]
        arrows |= {(boxes[a], boxes[b]) for a, b in pairwise(chain) if a in boxes and b in boxes}
    return boxes, arrows


def imports_between_boxes() -> set[tuple[str, str]]:
    found = set()
    for module in graph().modules:
        if module.split(".")[0] not in first_party_apps():
            continue  # an external package
        for imported in graph().find_modules_directly_imported_by(module):
            if imported.split(".")[0] in first_party_apps() and box_of(module) != box_of(imported):
                found.add((box_of(module), box_of(imported)))
    return found


def test_the_apps_of_installed_apps_are_the_import_contracts_root_packages() -> None:
    assert first_party_apps() == set(importlinter()["root_packages"]), (
        "INSTALLED_APPS and [tool.importlinter] root_packages name different first-party packages"
    )


def test_every_app_is_a_box_of_both_architecture_diagrams() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    boxes, _ = mermaid_boxes_and_arrows(text)
    assert set(boxes.values()) == {*apps(), "kernel", "composition"}, (
        "the mermaid diagram's boxes (a label names its package as '(name/)') are not the apps"
    )
    (drawing,) = fenced(section(text, "The layers"), "text")
    missing = [app for app in apps() if not re.search(rf"\b{app}\b", drawing)]
    assert not missing, f"not in the text diagram of docs/architecture.md: {missing}"


def test_every_import_from_one_box_into_another_is_an_arrow_of_the_diagram() -> None:
    _, arrows = mermaid_boxes_and_arrows(ARCHITECTURE.read_text(encoding="utf-8"))
    undrawn = imports_between_boxes() - arrows
    assert not undrawn, f"imports the diagram of docs/architecture.md does not draw (importer, imported): {undrawn}"


def test_an_import_the_diagram_does_not_draw_is_found() -> None:
    text = (
        "```mermaid\nflowchart TD\n"
        '    a["composition<br/>x"]\n    b["kernel (reasoningbank/)<br/>y"]\n    c["memories app (memories/)"]\n'
        "    a --> c --> b\n```\n"
    )
    boxes, arrows = mermaid_boxes_and_arrows(text)
    assert boxes == {"a": "composition", "b": "kernel", "c": "memories"}
    assert arrows == {("composition", "memories"), ("memories", "kernel")}
    assert ("memories", "accounts") in imports_between_boxes() - arrows


# --- the index ------------------------------------------------------------------------------------------


def test_every_app_is_named_in_the_index_line_of_the_architecture_page() -> None:
    (line,) = [line for line in (DOCS / "README.md").read_text().splitlines() if "(architecture.md)" in line]
    missing = [app for app in apps() if not re.search(rf"\b{app}\b", line)]
    assert not missing, f"docs/README.md's line for architecture.md does not name: {missing}"


def test_every_docs_page_is_in_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    pages = [path.relative_to(DOCS).as_posix() for path in sorted(DOCS.rglob("*.md")) if path.name != "README.md"]
    missing = [page for page in pages if f"]({page})" not in index]
    assert not missing, f"pages docs/README.md does not list: {missing}"


# --- the tree of "Where things are" -----------------------------------------------------------------------


def tree_entries() -> list[tuple[str, str]]:
    """(path as written, the line's description) for each path of the "Where things are" tree: a line
    indented 0 or 2 spaces lists paths separated by single spaces (2 spaces: under the last top-level
    folder), then its description after two spaces or more; deeper lines continue a description."""
    (tree,) = fenced(section(ARCHITECTURE.read_text(encoding="utf-8"), "Where things are"), "text")
    entries, parent = [], ""
    for line in tree.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if indent not in (0, 2) or not line.strip():
            continue
        paths, _, description = line.strip().partition("  ")
        for token in paths.split():
            if token == "…":
                continue
            if indent == 0:
                entries.append((token, description.strip()))
                parent = token if token.endswith("/") else parent
            else:
                entries.append((parent + token, description.strip()))
    return entries


def exists(path: str) -> bool:
    """A path of the tree, where ``<app>`` and ``*`` stand for any name."""
    pattern = re.sub(r"<[^>]+>", "*", path).rstrip("/")
    return any(REPO.glob(pattern)) if "*" in pattern else (REPO / pattern).exists()


def test_every_path_of_the_architecture_page_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    in_prose = [
        span
        for span in re.findall(r"`([^`\s]+)`", text)
        if re.fullmatch(r"[a-z_][\w.-]*(/[\w.*-]+)*/?", span) and ("/" in span or span.endswith(".toml"))
    ]
    assert tree_entries() and in_prose
    missing = sorted({path for path, _ in tree_entries()} | set(in_prose), key=str)
    missing = [path for path in missing if not exists(path)]
    assert not missing, f"named in docs/architecture.md but not in the repository: {missing}"


def test_every_app_has_an_entry_in_the_tree() -> None:
    top = {path for path, _ in tree_entries() if path.count("/") == 1 and path.endswith("/")}
    missing = [app for app in apps() if f"{app}/" not in top]
    assert not missing, f"apps without a line in docs/architecture.md's 'Where things are': {missing}"


# --- pure modules ---------------------------------------------------------------------------------------


def declares_pure(path: Path) -> bool:
    """A module-level ``__pure__ = True``."""
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "__pure__" for target in node.targets)
        and isinstance(node.value, ast.Constant)
        and node.value.value is True
        for node in ast.parse(path.read_text(encoding="utf-8")).body
    )


def marked_pure() -> dict[str, Path]:
    found = {}
    for path in python_modules():
        parts = path.relative_to(REPO).with_suffix("").parts
        if parts[0] in first_party_apps() and declares_pure(path):
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_no_module_that_says_it_is_pure_reaches_django() -> None:
    pure = marked_pure()
    assert len(pure) > 20
    forbidden = [name for name in graph().modules if name in DJANGO or MODELS.match(name)]
    chains = []
    for module in sorted(pure):
        for target in forbidden:
            chain = graph().find_shortest_chain(importer=module, imported=target)
            if chain:
                chains.append(" -> ".join(chain))
    assert not chains, "pure modules that import Django or a model module:\n" + "\n".join(chains)


def test_what_the_tree_calls_pure_says_it_is_pure() -> None:
    """A line whose description starts with "pure" (pure decisions), and a ``(name.py, pure)`` in a
    description, name modules that declare ``__pure__ = True``."""
    named = [path for path, description in tree_entries() if description.startswith("pure") and path.endswith(".py")]
    for path, description in tree_entries():
        folder = path if path.endswith("/") else path.rpartition("/")[0] + "/"
        named += [folder + name for name in re.findall(r"\((\w+\.py), pure\)", description)]
    assert named
    impure = [
        path
        for path in named
        if not any(REPO.glob(path)) or not all(declares_pure(module) for module in REPO.glob(path))
    ]
    assert not impure, f"docs/architecture.md calls these pure, but they do not say __pure__ = True: {impure}"


# --- names ----------------------------------------------------------------------------------------------


def test_the_schedule_table_is_the_schedule_list() -> None:
    table = section(ARCHITECTURE.read_text(encoding="utf-8"), "The worker and the schedules")
    documented = re.findall(r"^\| `(rb:[\w-]+)` \|", table, flags=re.M)
    assert sorted(documented) == sorted(spec.name for spec in schedule_specs())


@cache
def defined_names() -> frozenset[str]:
    """Every function, class and assigned name of the repository's Python, at any depth."""
    names: set[str] = set()
    for path in python_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(names)


# named in code spans but not ours: Python's, Django's, pydantic's, pytest's
NOT_OURS = {*dir(builtins), "path", "model_dump", "cross_tenant", "extend_schema"}


@pytest.mark.parametrize("page", ["architecture.md", "contributing.md", "decisions.md"])
def test_every_function_or_class_the_page_names_in_code_is_defined(page: str) -> None:
    """A span such as `memory_search_run(...)`, `@phase_register(...)`, `reasoningbank.x.tool_modules()`
    or `OrgAPIView` names code: the last name of a call, or a CamelCase class."""
    text = (DOCS / page).read_text(encoding="utf-8")
    named = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        # a name right after "." or ">" is a method of something else (`.tolist()`) or a placeholder's tail
        named |= {call.rpartition(".")[2] for call in re.findall(r"(?<![\w.>])@?([A-Za-z_][\w.]*)\(", span)}
        if re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+", span):
            named.add(span)
    unknown = sorted(name for name in named - NOT_OURS if name not in defined_names())
    assert not unknown, f"docs/{page} names code that is defined nowhere: {unknown}"
