"""One name for the API token's environment variable, everywhere a person reads or pastes one: the README,
docs/, the agent integrations, the SDKs and the dashboard's snippets all say ``REASONINGBANK_TOKEN``, the
name the plugin, the hooks and the SDKs read. A second name (``RB_TOKEN``) meant a newcomer exported one and
the plugin read the other.

Pure file reading, no Django."""

from __future__ import annotations

import re
from pathlib import Path

from tests.repo_files import REPO, repo_files

NAME = "REASONINGBANK_TOKEN"
# where a user meets the variable: what they read, paste or install
PLACES = ("README.md", "docs/", "integrations/", "clients/", "templates/", "scripts/", "accounts/tokens/views.py")
# the shapes that name an environment variable in a shell line, a client's config file or code reading one
REFERENCES = [
    re.compile(r"\bexport\s+([A-Z][A-Z0-9_]*TOKEN)\b"),
    re.compile(r"\$\{(?:env:)?([A-Z][A-Z0-9_]*TOKEN)\}"),
    re.compile(r"\$([A-Z][A-Z0-9_]*TOKEN)\b"),
    re.compile(r"bearer_token_env_var\s*=\s*\"([A-Z0-9_]+)\""),
    re.compile(r"environ(?:\.get\(|\[)\s*[\"']([A-Z][A-Z0-9_]*TOKEN)[\"']"),
    re.compile(r"\benv\(\"([A-Z][A-Z0-9_]*TOKEN)\"\)"),
]
# other secrets, not the API token: the metrics scrape, and the CI, deploy and chat tokens of the docs' examples
OTHER_SECRETS = {"METRICS_TOKEN", "DEPLOY_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "TELEGRAM_TOKEN"}


def places() -> list[Path]:
    return [
        path
        for path in repo_files()
        if path.relative_to(REPO).as_posix().startswith(PLACES)
        and path.suffix in {"", ".md", ".py", ".json", ".toml", ".ts", ".html", ".mdc", ".sh"}
    ]


def named(text: str) -> set[str]:
    return {found for pattern in REFERENCES for found in pattern.findall(text)} - OTHER_SECRETS


def test_every_place_a_user_meets_the_token_variable_names_reasoningbank_token():
    strays = {
        f"{path.relative_to(REPO)}: {sorted(names - {NAME})}"
        for path in places()
        if (names := named(path.read_text(errors="replace"))) - {NAME}
    }
    assert not strays, "\n".join(sorted(strays))


def test_the_readme_exports_the_token_under_the_name_the_plugin_reads():
    readme = (REPO / "README.md").read_text()
    hooks = "".join(path.read_text() for path in sorted((REPO / "integrations/claude-code/hooks").rglob("*.py")))

    assert f"export {NAME}=$(" in readme
    assert named(readme) == {NAME} and NAME in named(hooks)
    assert "RB_TOKEN" not in readme


def test_the_check_sees_a_second_name():
    assert named('export RB_TOKEN=x\ncurl -H "Bearer $RB_TOKEN"\n{"a": "${env:RB_TOKEN}"}') == {"RB_TOKEN"}
    assert named('bearer_token_env_var = "RB_TOKEN"\nos.environ["RB_TOKEN"]') == {"RB_TOKEN"}
