"""The wheel holds the whole service: every first-party app of ``INSTALLED_APPS`` with every file of its
packages, found by setuptools' discovery (pyproject.toml) rather than a hand-kept list that a new app
can miss, as webhooks once was.

The wheel is built offline from a copy of the tree (``pip wheel --no-build-isolation``: the backend,
setuptools, is a dev dependency), unpacked into a temporary directory, and Django is set up from there
in a fresh interpreter whose only first-party code is the wheel's: its working directory is outside the
repository and every app's module must come from the unpacked wheel, not from the editable install.

The project-level ``templates/`` and ``static/`` are not in the wheel: they belong to no package, and the
settings find them beside the checkout (``BASE_DIR``), from which the service runs (scripts/run.sh, and the
Docker image's editable install)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from django.conf import settings

from tests.repo_files import REPO, repo_files

SETUP_AND_REPORT = """
import json, django
django.setup()
from django.apps import apps
import reasoningbank.urls  # every app's views, APIs and MCP tools, as the service loads them
print(json.dumps({config.name: config.module.__file__ for config in apps.get_app_configs()}))
"""


def first_party_apps() -> list[str]:
    """The apps of INSTALLED_APPS whose package is a folder of this repository."""
    return [name for name in settings.INSTALLED_APPS if (REPO / name.split(".")[0] / "__init__.py").is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the tree (the build writes its build/ folder there, not here)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    for path in repo_files(frozenset({"__pycache__", "node_modules"})):
        target = source / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    dist = base / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run(
        [*pip_wheel, "-q", "--disable-pip-version-check", "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    [built] = dist.glob("*.whl")
    return built


def test_the_wheel_holds_every_file_of_every_first_party_app(wheel: Path) -> None:
    apps = first_party_apps()
    assert {"reasoningbank", "memories", "webhooks"} <= set(apps)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = [
        str(path.relative_to(REPO))
        for path in repo_files(frozenset({"__pycache__"}))
        if path.relative_to(REPO).parts[0] in apps and str(path.relative_to(REPO)) not in shipped
    ]
    assert not missing, (
        f"the wheel lacks {missing[:10]}: a package the discovery of [tool.setuptools.packages.find] leaves out, "
        "or a file type [tool.setuptools.package-data] in pyproject.toml does not name"
    )
    # and nothing else: not the test suite, the bench or the SDKs
    packages = {name.split("/")[0] for name in shipped if ".dist-info/" not in name}
    assert packages == {app.split(".")[0] for app in apps}


def test_django_starts_from_the_unpacked_wheel_alone_with_every_app_of_installed_apps(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(site),
        "DJANGO_SETTINGS_MODULE": "reasoningbank.settings",
        "RB_DATA_DIR": str(tmp_path / "data"),
        # a server never connected to: setting up Django and importing the URL conf open no connection
        "DATABASE_URL": "postgres://nobody@127.0.0.1:9/none",
        "SECRET_KEY": "packaging-test-only-" + "k" * 40,
    }
    result = subprocess.run(
        [sys.executable, "-c", SETUP_AND_REPORT], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    apps = first_party_apps()
    assert set(apps) <= set(loaded), f"apps not loaded from the wheel: {set(apps) - set(loaded)}"
    not_from_wheel = {app: loaded[app] for app in apps if not Path(loaded[app]).is_relative_to(site)}
    assert not not_from_wheel, f"these apps came from outside the wheel: {not_from_wheel}"


def test_every_app_is_a_root_package_of_the_import_contracts() -> None:
    """A new app is in the wheel by itself, but its import contracts start from ``root_packages``, the one
    list of apps a new one must join in pyproject.toml (docs/contributing.md#what-is-found-and-what-is-listed)."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert set(contracts["root_packages"]) == {app.split(".")[0] for app in first_party_apps()}
