"""A setting's default lives in one place: its settings module (reasoningbank/settings/), which reads the
environment with an ``env_*`` reader. Code reads ``settings.X`` — never ``getattr(settings, "X", default)``,
``hasattr(settings, "X")``, ``settings.X or "default"``, nor the variable itself from ``os.environ`` —
so a default cannot drift from the documented one (``EMBEDDER`` once fell back to ``hashing`` in code
while its setting said ``minilm-onnx``).

The few processes that start before Django (uvicorn's log configuration, run.sh starting PostgreSQL) read
their variable from the environment themselves; they are listed below with the reason, and take the
default from the same constant or function as the settings module.

Pure ``ast`` reading of the service's code: every top-level package of the repository but the tests (the
bench, the scripts, the agent plugins and the SDKs are separate programs that set the service's environment
or have variables of their own); no Django, no database."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.repo_files import REPO, python_modules

SETTINGS_DIR = REPO / "reasoningbank" / "settings"
SETTING_NAME = re.compile(r"^[A-Z][A-Z0-9_]+$")

# (module, variable): read from the environment before Django's settings exist
BEFORE_DJANGO = {
    # uvicorn's --log-config (reasoningbank/uvicorn_logging.json) builds its formatter before Django starts;
    # the default comes from log_format_default, as in settings/observability.py
    ("reasoningbank/logging_json.py", "LOG_FORMAT"),
    ("reasoningbank/logging_json.py", "DEBUG"),
    # `python -m reasoningbank.embedded_db start` (scripts/run.sh) starts PostgreSQL before Django; the
    # default is DEFAULT_SHARED_BUFFERS, as in settings/database.py
    ("reasoningbank/embedded_db.py", "RB_PG_SHARED_BUFFERS"),
}


def settings_variables() -> set[str]:
    """Every environment variable a settings module reads: the first argument of its ``env_*`` readers
    (and of the helpers that wrap them, such as ``_write_limit("WRITE_LIMIT_ORG_PER_DAY")``)."""
    names = set()
    for path in SETTINGS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                value = node.args[0].value
                if isinstance(value, str) and SETTING_NAME.match(value):
                    names.add(value)
    return names


def code_modules() -> list[Path]:
    """The service's modules (its packages, as the wheel's discovery finds them), the settings aside."""
    return [
        path
        for path in python_modules()
        if len(path.relative_to(REPO).parts) > 1
        and path.relative_to(REPO).parts[0] != "tests"
        and (REPO / path.relative_to(REPO).parts[0] / "__init__.py").is_file()
        and not path.is_relative_to(SETTINGS_DIR)
    ]


def is_settings(node: ast.AST) -> bool:
    """``settings`` or ``django.conf.settings`` (or an alias ending in ``settings``)."""
    if isinstance(node, ast.Name):
        return node.id.endswith("settings")
    return isinstance(node, ast.Attribute) and node.attr == "settings"


def is_setting_read(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and is_settings(node.value) and bool(SETTING_NAME.match(node.attr))


def environment_read(node: ast.AST) -> str | None:
    """The variable of ``os.environ.get("X")``, ``os.getenv("X")``, ``os.environ["X"]``, ``environ.get("X")``."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = ast.unparse(node.func)
        if func in {"os.environ.get", "environ.get", "os.getenv", "getenv"}:
            return node.args[0].value if isinstance(node.args[0].value, str) else None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and ast.unparse(node.value) in {"os.environ", "environ"}
    ):
        key = node.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    return None


def defaults_in_code(tree: ast.AST, variables: set[str]) -> Iterator[tuple[int, str, str | None]]:
    """(line, what, environment variable or None) for each default of a setting given in code."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and is_settings(node.args[0]):
            if node.func.id == "getattr" and len(node.args) == 3:
                yield node.lineno, ast.unparse(node), None
            if node.func.id == "hasattr":
                yield node.lineno, ast.unparse(node), None
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            if any(is_setting_read(value) for value in node.values[:-1]):
                last = node.values[-1]
                if isinstance(last, ast.Constant | ast.List | ast.Dict | ast.Tuple) and not (
                    isinstance(last, ast.Constant) and last.value is None
                ):
                    yield node.lineno, ast.unparse(node), None
        variable = environment_read(node)
        if variable in variables:
            yield node.lineno, ast.unparse(node), variable


def test_the_scan_finds_each_form_of_a_default_repeated_in_code() -> None:
    source = """
from django.conf import settings
import os
a = getattr(settings, "EMBEDDER", "hashing")
b = hasattr(settings, "LLM_MODEL")
c = settings.LLM_MODEL or "claude"
d = os.environ.get("EMBEDDER", "minilm-onnx")
e = os.environ["LLM_PROVIDER"]
fine = (settings.LLM_MODEL or None, getattr(settings, name), os.environ.get("HOME"), settings.X if a else b)
"""
    found = [line for line, _, _ in defaults_in_code(ast.parse(source), {"EMBEDDER", "LLM_PROVIDER"})]
    assert found == [4, 5, 6, 7, 8]


def test_the_settings_modules_read_the_variables_code_once_read_itself() -> None:
    variables = settings_variables()
    assert {"EMBEDDER", "LLM_PROVIDER", "LOG_FORMAT", "RB_PG_SHARED_BUFFERS", "WRITE_LIMIT_ORG_PER_DAY"} <= variables


def test_no_code_gives_a_setting_a_default_of_its_own() -> None:
    variables = settings_variables()
    found, excused = [], set()
    for path in code_modules():
        relative = str(path.relative_to(REPO))
        for line, text, variable in defaults_in_code(ast.parse(path.read_text(encoding="utf-8")), variables):
            if (relative, variable) in BEFORE_DJANGO:
                excused.add((relative, variable))
            else:
                found.append(f"{relative}:{line}: {text}")
    assert not found, (
        "a setting's default belongs in its module of reasoningbank/settings/ only; read settings.X instead:\n"
        + "\n".join(found)
    )
    assert excused == BEFORE_DJANGO, f"stale entries of BEFORE_DJANGO: {BEFORE_DJANGO - excused}"
