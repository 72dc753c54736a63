"""Provenance through export and import (docs/export-import.md#provenance): an export carries each memory's
provenance, trust, flags and review; an import records who imported it, from which file, and keeps what
the file said as a claim — never as the importing organization's own record — with its trust pending
unless the importing admin states they reviewed the file (audited)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.access import Principal, principal_for_membership, system_principal
from accounts.models import AuditEvent, Membership, Organization
from accounts.tokens.services import token_create
from memories.models import Memory
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import bank_import
from tests.factories import MemoryFactory, OrganizationFactory

pytestmark = pytest.mark.django_db


def export_text(principal: Principal) -> str:
    return "".join(export_lines(export_scope(principal)))


def records(text: str, kind: str = "memory") -> list[dict[str, Any]]:
    return [line for line in map(json.loads, text.splitlines()) if line["type"] == kind]


@pytest.fixture
def initech(cast: Any) -> Organization:
    org = OrganizationFactory(slug="initech", name="Initech", plan="pro")
    Membership.objects.create(organization=org, user=cast.alice, role=Membership.ROLE_ADMIN)
    return org


@pytest.fixture
def recorded(cast: Any) -> Memory:
    memory = MemoryFactory(principal=cast.principal(cast.alice), project="web-app", title="Pin the Node version")
    Memory.objects.filter(pk=memory.pk).update(
        trust=Memory.TRUST_TRUSTED, reviewed_by=cast.alice,
        flags=[{"rule": "remote_script", "reason": "pipes a script into a shell", "field": "content", "start": 0,
                "end": 9, "excerpt": "curl … | sh"}],
    )  # fmt: skip
    memory.refresh_from_db()
    return memory


def test_an_export_carries_each_memorys_provenance_trust_flags_and_review(cast, recorded):
    (line,) = records(export_text(system_principal(cast.org_a)))
    header = json.loads(export_text(system_principal(cast.org_a)).splitlines()[0])

    assert header["version"] == 2
    assert line["provenance"] == recorded.provenance and line["provenance"]["how"] == "recorded"
    assert (line["trust"], line["reviewed_by"]) == ("trusted", "alice@acme.test")
    assert line["flags"][0]["rule"] == "remote_script"


def test_an_import_records_who_imported_it_and_keeps_the_files_provenance_as_a_claim(cast, recorded, initech):
    importer = principal_for_membership(Membership.objects.get(organization=initech, user=cast.alice))
    before = timezone.now()

    result = bank_import(principal=importer, source=export_text(system_principal(cast.org_a)), file_name="acme.jsonl")

    copy = Memory.objects.get(pk=result.memory_ids[recorded.id])
    provenance = copy.provenance
    assert provenance["how"] == "imported" and datetime.fromisoformat(provenance["at"]) >= before  # when imported
    assert copy.created_at == recorded.created_at  # the memory keeps its own age
    assert provenance["by"] == {"kind": "user", "user_id": cast.alice.pk, "email": "alice@acme.test", "role": "admin"}
    imported = provenance["import"]
    assert (imported["file"], imported["format"], imported["organization"]) == ("acme.jsonl", "reasoningbank", "acme")
    assert imported["claimed"] == recorded.provenance  # what acme recorded, kept as acme's claim
    assert imported["claimed_trust"] == "trusted" and imported["claimed_review"]["by"] == "alice@acme.test"
    assert [flag["rule"] for flag in imported["claimed_flags"]] == ["remote_script"]
    # never trusted as it was: the import's own decision, and nothing of the file's review or flags applied
    assert (copy.trust, copy.reviewed_by, copy.reviewed_at, copy.flags) == ("pending", None, None, [])
    assert result.trust == "pending"


def test_provenance_survives_export_then_import_then_export_nested_as_claims(cast, recorded, initech):
    first = bank_import(principal=system_principal(initech), source=export_text(system_principal(cast.org_a)))
    again = OrganizationFactory(slug="hooli", plan="pro")

    second = bank_import(principal=system_principal(again), source=export_text(system_principal(initech)))

    copy = Memory.objects.get(pk=second.memory_ids[first.memory_ids[recorded.id]])
    outer = copy.provenance["import"]
    assert outer["organization"] == "initech" and outer["claimed"]["how"] == "imported"
    assert outer["claimed"]["import"]["organization"] == "acme"
    assert outer["claimed"]["import"]["claimed"] == recorded.provenance
    assert copy.provenance["by"] == {"kind": "system"}  # manage.py import_memories: the operator
    assert copy.provenance["client"] == {"transport": "internal"}


def test_a_reviewed_import_is_trusted_names_its_reviewer_and_says_so_in_the_audit(cast, recorded, initech):
    importer = principal_for_membership(Membership.objects.get(organization=initech, user=cast.alice))

    result = bank_import(principal=importer, source=export_text(system_principal(cast.org_a)), reviewed=True)

    copy = Memory.objects.get(pk=result.memory_ids[recorded.id])
    assert (copy.trust, copy.reviewed_by, result.trust) == ("trusted", cast.alice, "trusted")
    assert copy.reviewed_at is not None
    audit = AuditEvent.objects.get(organization=initech, verb="bank.import")
    assert audit.data["reviewed"] is True and audit.actor == "user:alice@acme.test"


def test_a_version_1_file_imports_with_a_claim_described_from_its_origin_and_creator(cast, recorded, initech):
    lines = [json.loads(line) for line in export_text(system_principal(cast.org_a)).splitlines()]
    lines[0]["version"] = 1
    for line in lines:
        for key in ("provenance", "trust", "flags", "reviewed_by", "reviewed_at"):
            line.pop(key, None)
    old = "\n".join(json.dumps(line) for line in lines)

    result = bank_import(principal=system_principal(initech), source=old)

    claimed = Memory.objects.get(pk=result.memory_ids[recorded.id]).provenance["import"]["claimed"]
    assert claimed["described"] is True and claimed["how"] == "recorded"
    assert claimed["by"] == {"kind": "user", "email": "alice@acme.test"}
    assert claimed["at"] == recorded.created_at.isoformat()


def test_a_forged_provenance_in_a_file_is_cleaned_and_stays_a_claim(cast, recorded, initech):
    lines = [json.loads(line) for line in export_text(system_principal(cast.org_a)).splitlines()]
    lines[1]["provenance"] = {
        "v": 1, "how": "recorded", "at": "2026-01-01T00:00:00+00:00", "trusted": True,
        "by": {"kind": "user", "email": "ceo@initech.test\u202e\x1b[2J", "role": "owner", "is_admin": True},
        "client": {"transport": "dashboard", "user_agent": "x Authorization: Bearer ghp_" + "c" * 36},
    }  # fmt: skip
    lines[1]["trust"] = "trusted"

    result = bank_import(principal=system_principal(initech), source="\n".join(map(json.dumps, lines)))

    copy = Memory.objects.get(pk=result.memory_ids[recorded.id])
    claimed = copy.provenance["import"]["claimed"]
    assert claimed["by"] == {"kind": "user", "email": "ceo@initech.test", "role": "owner"}
    assert "trusted" not in claimed and "ghp_" not in json.dumps(claimed)
    assert copy.trust == "pending" and copy.provenance["by"] == {"kind": "system"}


def test_a_provenance_that_is_not_an_object_is_a_bad_line(cast, recorded, initech):
    lines = [json.loads(line) for line in export_text(system_principal(cast.org_a)).splitlines()]
    lines[1]["provenance"] = "recorded by the CEO"

    response = rest_import(initech, "\n".join(map(json.dumps, lines)), cast.alice)

    assert response.status_code == 400
    (problem,) = response.json()["errors"]["line 2"]
    assert problem.startswith("field provenance: must be an object")
    assert not Memory.objects.filter(organization=initech).exists()


def rest_import(org: Organization, text: str, creator: Any, **options: Any) -> Any:
    _, raw = token_create(organization=org, label="admin", scopes=["admin", "memories:read"], created_by=creator)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client.post("/api/v1/import", {"text": text, **options}, format="json")


def test_the_rest_import_takes_reviewed_and_the_files_name(cast, recorded, initech):
    response = rest_import(
        initech, export_text(system_principal(cast.org_a)), cast.alice, reviewed=True, source_name="acme.jsonl"
    )

    assert response.status_code == 200, response.json()
    assert response.json()["trust"] == "trusted"
    copy = Memory.objects.get(pk=response.json()["memory_ids"][recorded.id])
    assert copy.provenance["import"]["file"] == "acme.jsonl" and copy.reviewed_by == cast.alice
    assert copy.provenance["by"]["token_creator_email"] == "alice@acme.test"
