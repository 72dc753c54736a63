"""The live OpenAPI schema, rendered exactly as ``scripts/generate-clients.sh`` writes it for the client
generators (drf-spectacular's ``spectacular`` command), and the TypeScript client's tools."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
PYTHON_CLIENT = ROOT / "clients" / "python"
TS_CLIENT = ROOT / "clients" / "typescript"
# the flags of package.json's "generate" script (test_client_drift checks they are the same)
OPENAPI_TYPESCRIPT_FLAGS = ["--default-non-nullable", "false"]


def schema_file(directory: Path) -> Path:
    """Writes the live schema as ``openapi.json`` into ``directory``."""
    path = directory / "openapi.json"
    call_command("spectacular", format="openapi-json", file=str(path))
    return path


def schema_of(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def python_generator() -> ModuleType:
    """clients/python/generate_models.py (a script beside the package, not part of it)."""
    spec = importlib.util.spec_from_file_location("generate_models", PYTHON_CLIENT / "generate_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_tools() -> Path:
    """The TypeScript client's ``node_modules/.bin``; the caller skips when ``node`` is absent."""
    return TS_CLIENT / "node_modules" / ".bin"


def node_missing() -> bool:
    return shutil.which("node") is None
