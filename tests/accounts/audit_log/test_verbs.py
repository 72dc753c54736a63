"""The catalogue of verbs (accounts/audit_log/verbs.py) is what the code records and what the docs list: a
verb written anywhere in the service without its entry, or an entry missing from the table of
docs/identity.md#the-audit-log, fails here."""

from __future__ import annotations

import ast

from accounts.audit_log.verbs import CATEGORY_PATTERN, VERB_PATTERN, VERBS, verb_categories
from tests.repo_files import REPO

APPS = ("accounts", "memories", "consolidation", "webhooks", "system", "reasoningbank")
# verbs built at run time from a field or decision name: the values they take
DYNAMIC = {
    "organization.": ("poisoning_policy", "injection_policy", "trusted_hosts"),
    "promotion.": ("accept", "reject"),
}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.JoinedStr):  # f"organization.{field}"
        prefix = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
        return [f"{prefix}{value}" for value in DYNAMIC[prefix]]
    return []


def verbs_in_code() -> set[str]:
    """Every verb given to ``audit_record`` / ``audit_record_many`` as a literal, and every ``*_VERB`` /
    ``VERB_*`` constant."""
    found: set[str] = set()
    for app in APPS:
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.keyword) and node.arg == "verb":
                    found.update(_strings(node.value))
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    names += [
                        e.id
                        for t in node.targets
                        if isinstance(t, ast.Tuple)
                        for e in t.elts
                        if isinstance(e, ast.Name)
                    ]
                    if any(name.endswith("_VERB") or name.startswith("VERB_") for name in names):
                        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                        for value in values:
                            found.update(s for s in _strings(value) if VERB_PATTERN.fullmatch(s))
    return found


def test_every_verb_the_code_records_is_in_the_catalogue() -> None:
    code = verbs_in_code()
    assert {"auth.sign_in", "token.revoke", "organization.plan_change"} <= code  # the scan sees them
    assert sorted(code - set(VERBS)) == []


def test_every_verb_is_well_formed_and_every_category_too() -> None:
    assert all(VERB_PATTERN.fullmatch(verb) for verb in VERBS)
    assert all(CATEGORY_PATTERN.fullmatch(category) for category in verb_categories())


def test_the_docs_list_every_verb() -> None:
    text = (REPO / "docs" / "identity.md").read_text()
    section = text[text.index("## The audit log") :]
    assert sorted(verb for verb in VERBS if f"`{verb}`" not in section) == []
