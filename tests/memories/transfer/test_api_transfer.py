"""REST export and import (docs/export-import.md): admins only, a streamed JSON Lines export, an import
that names the bad line and field and writes nothing, and another organization's data out of reach."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from memories.models import Memory
from tests.accounts.oauth.oauth_flow import API_RESOURCE, Flow, dcr_client
from tests.factories import MemoryFactory, OrganizationFactory

pytestmark = pytest.mark.django_db

ADMIN = ["admin"]


def body_lines(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def memories(cast: Any) -> list[Memory]:
    alice = cast.principal(cast.alice)
    charlie = cast.principal(cast.charlie)
    MemoryFactory(principal=charlie, project="billing", title="Globex invoices are net 30")
    return [MemoryFactory(principal=alice, project="web-app", title=f"Acme lesson {n}") for n in range(3)]


@pytest.mark.cross_tenant("api-export")
def test_an_admin_token_exports_its_own_org_only_as_streamed_json_lines(cast, memories, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).get("/api/v1/export", HTTP_ACCEPT="application/x-ndjson")

    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith('attachment; filename="acme-')
    lines = body_lines(response)
    assert lines[0]["type"] == "header" and lines[0]["organization"] == "acme"
    assert [p["slug"] for p in lines[0]["projects"]] == ["web-app"]
    titles = {line["title"] for line in lines if line["type"] == "memory"}
    assert titles == {"Acme lesson 0", "Acme lesson 1", "Acme lesson 2"}
    assert lines[-1] == {
        "type": "end",
        "counts": {"weights": 0, "memory": 3, "link": 0, "signal": 0, "summary": 0, "session_use": 0},
        "dropped": {},
    }
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="bank.export").count() == 1


@pytest.mark.cross_tenant("api-export")
def test_another_orgs_project_is_a_404_and_writes_no_audit_row(cast, memories, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).get(
        "/api/v1/export", {"project": "billing"}, HTTP_ACCEPT="application/x-ndjson"
    )

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json()["errors"] == {"project": ["project 'billing' not found"]}
    assert not AuditEvent.objects.filter(verb="bank.export").exists()


def test_one_projects_export_and_its_embeddings(cast, memories, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).get(
        "/api/v1/export", {"project": "web-app", "embeddings": "true"}
    )

    lines = body_lines(response)
    assert lines[0]["project"] == "web-app" and lines[0]["embeddings"] is True
    vectors = [line["embedding"] for line in lines if line["type"] == "memory"]
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)


def test_an_unknown_query_parameter_is_a_400(cast, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).get("/api/v1/export", {"projects": "web-app"})

    assert response.status_code == 400 and "projects" in response.json()["errors"]


def test_without_the_admin_scope_export_and_import_are_403(cast, memories, token_client):
    client = token_client(cast.org_a)  # read, write, consolidation:run — no admin

    export = client.get("/api/v1/export")
    imported = client.post("/api/v1/import", {"text": "x"}, format="json")

    assert export.status_code == 403 and "'admin' scope" in export.json()["detail"]
    assert imported.status_code == 403
    assert Memory.objects.count() == 4


def test_a_viewers_connected_app_cannot_export(cast, memories):
    """Bob is a viewer: an app he connects gets memories:read at most, never admin."""
    bob = Client()
    bob.force_login(cast.bob)
    flow = Flow(dcr_client(Client()), resources=[API_RESOURCE], scopes=["memories:read"])
    token = flow.tokens(bob, org="acme", scopes=["memories:read"])["access_token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")

    assert client.get("/api/v1/memories").status_code == 200  # the token works…
    assert client.get("/api/v1/export").status_code == 403  # …but exports nothing
    assert client.post("/api/v1/import", {"text": "x"}, format="json").status_code == 403


def test_a_token_without_credentials_is_401(memories):
    assert APIClient().get("/api/v1/export").status_code == 401


@pytest.mark.cross_tenant("api-import")
def test_an_export_imports_into_another_org_with_new_ids_and_nothing_reaches_the_exporter(cast, memories, token_client):
    exported = b"".join(token_client(cast.org_a, scopes=ADMIN).get("/api/v1/export").streaming_content).decode()
    target = OrganizationFactory(slug="initech", plan="pro")

    response = token_client(target, scopes=ADMIN).post("/api/v1/import", {"text": exported}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["created"]["memory"] == 3 and body["projects_created"] == ["web-app"] and not body["dry_run"]
    assert set(body["memory_ids"]) == {m.id for m in memories}
    assert Memory.objects.filter(organization=target).count() == 3
    assert Memory.objects.filter(organization=cast.org_a).count() == 3  # the exporter is untouched
    assert Memory.objects.filter(organization=cast.org_b).count() == 1
    assert AuditEvent.objects.filter(organization=target, verb="bank.import").count() == 1


@pytest.mark.cross_tenant("api-import")
def test_importing_into_another_orgs_project_is_a_404(cast, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).post(
        "/api/v1/import", {"text": "## Deploys\nDeploy on Tuesdays only.", "format": "claude-md", "project": "billing"},
        format="json",
    )  # fmt: skip

    assert response.status_code == 404
    assert not Memory.objects.exists()


def test_a_bad_file_is_a_400_naming_each_line_and_field(cast, token_client):
    text = "\n".join(
        [
            json.dumps({"type": "header", "format": "reasoningbank-export", "version": 1}),
            json.dumps({"type": "memory", "id": "m1", "project": "web-app", "title": "ok", "content": "fine"}),
            json.dumps(
                {"type": "memory", "id": "m2", "project": "web-app", "title": "x", "content": "y", "kind": "idea"}
            ),
            "not json",
            json.dumps({"type": "end"}),
        ]
    )

    response = token_client(cast.org_a, scopes=ADMIN).post("/api/v1/import", {"text": text}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert body["detail"].startswith("Invalid import: line 3, field kind: must be one of")
    assert body["errors"]["line 3"] == [
        "field kind: must be one of working, episodic, semantic, procedural (got 'idea')"
    ]
    assert body["errors"]["line 4"][0].startswith("not valid JSON")
    assert not Memory.objects.exists()


def test_a_summary_with_a_malformed_decision_is_a_400_naming_line_field_and_item(cast, token_client):
    text = "\n".join(
        json.dumps(record)
        for record in [
            {"type": "header", "format": "reasoningbank-export", "version": 1},
            {"type": "memory", "id": "m1", "project": "web-app", "title": "Retry webhooks", "content": "With backoff"},
            {"type": "summary", "id": "s1", "memory": "m1", "summary": "Retry with backoff.",
             "decisions": [{"decision": "Retry", "confidence": 3}]},
            {"type": "end"},
        ]
    )  # fmt: skip

    response = token_client(cast.org_a, scopes=ADMIN).post("/api/v1/import", {"text": text}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"]["line 3"] == [
        "field decisions: item 1: lacks the key 'rationale' (a decision has decision, rationale, outcome, confidence)"
    ]
    assert not Memory.objects.exists()


def test_a_claude_md_dry_run_reports_without_writing(cast, token_client):
    response = token_client(cast.org_a, scopes=ADMIN).post(
        "/api/v1/import",
        {"text": "## Testing\n- Run pytest -x before pushing\n- Keep fixtures small\n", "format": "claude-md",
         "dry_run": True},
        format="json",
    )  # fmt: skip

    assert response.status_code == 200
    assert response.json()["created"]["memory"] == 2 and response.json()["dry_run"] is True
    assert not Memory.objects.exists()


def test_a_text_above_the_limit_is_a_413_pointing_at_the_command(cast, token_client, settings):
    settings.IMPORT_MAX_BYTES = 1024

    response = token_client(cast.org_a, scopes=ADMIN).post(
        "/api/v1/import", {"text": "x" * 2000, "format": "claude-md"}, format="json"
    )

    assert response.status_code == 413 and response.json()["code"] == "too_large"
    assert list(response.json()["errors"]) == ["text"] and "import_memories" in response.json()["detail"]


def test_unknown_fields_and_formats_are_400s(cast, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)

    assert "colour" in client.post("/api/v1/import", {"text": "x", "colour": 1}, format="json").json()["errors"]
    assert "format" in client.post("/api/v1/import", {"text": "x", "format": "csv"}, format="json").json()["errors"]


def test_a_restricted_admin_token_handles_its_project_only(cast, memories, token_client):
    client = token_client(cast.org_a, scopes=ADMIN, projects=[cast.project_a])

    assert client.get("/api/v1/export").status_code == 400
    assert client.get("/api/v1/export", {"project": "web-app"}).status_code == 200


# --- the exported file as the body (application/x-ndjson) ----------------------------------------------

NDJSON = "application/x-ndjson"


def _export(client: Any) -> bytes:
    return b"".join(client.get("/api/v1/export").streaming_content)


@pytest.mark.cross_tenant("api-import")
def test_an_export_sent_as_the_body_imports_into_another_org_as_the_json_form_does(cast, memories, token_client):
    exported = _export(token_client(cast.org_a, scopes=ADMIN))
    target = OrganizationFactory(slug="initech", plan="pro")

    response = token_client(target, scopes=ADMIN).post("/api/v1/import", data=exported, content_type=NDJSON)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["created"]["memory"] == 3 and body["projects_created"] == ["web-app"] and not body["dry_run"]
    assert set(body["memory_ids"]) == {m.id for m in memories}
    imported = Memory.objects.filter(organization=target)
    assert sorted(imported.values_list("title", flat=True)) == sorted(m.title for m in memories)
    assert Memory.objects.filter(organization=cast.org_a).count() == 3  # the exporter is untouched
    assert Memory.objects.filter(organization=cast.org_b).count() == 1
    assert AuditEvent.objects.filter(organization=target, verb="bank.import").count() == 1


def test_the_options_of_a_body_import_are_query_parameters(cast, memories, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)
    exported = _export(client)

    dry = client.post("/api/v1/import?dry_run=true&project=web-app", data=exported, content_type=NDJSON)

    assert dry.status_code == 200, dry.json()
    assert dry.json()["dry_run"] is True and dry.json()["project"] == "web-app" and dry.json()["created"]["memory"] == 3
    assert Memory.objects.filter(organization=cast.org_a).count() == 3


def test_the_format_option_is_the_files_format_and_never_drfs_renderer_override(cast, memories, token_client):
    # DRF reads ?format= as "answer in this renderer" before it authenticates: a 404 for every import that
    # names its file's format, and a 404 instead of a 401 without a token
    client = token_client(cast.org_a, scopes=ADMIN)
    exported = _export(client)

    dry = client.post("/api/v1/import?format=reasoningbank&dry_run=true", data=exported, content_type=NDJSON)
    anonymous = APIClient().post("/api/v1/import?format=reasoningbank", data=exported, content_type=NDJSON)

    assert dry.status_code == 200, dry.json()
    assert dry.json()["created"]["memory"] == 3
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"


def test_a_bad_line_in_a_body_import_is_a_400_naming_the_line_and_nothing_is_written(cast, memories, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)
    lines = _export(client).decode().splitlines()
    lines.insert(2, '{"type": "memory", "id": "m9", "title": "cut short')

    response = client.post("/api/v1/import", data="\n".join(lines) + "\n", content_type=NDJSON)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and "line 3" in body["detail"]
    assert body["errors"]["line 3"][0].startswith("not valid JSON")
    assert Memory.objects.filter(organization=cast.org_a).count() == 3


def test_a_body_that_is_not_utf8_or_empty_is_a_400_saying_so(cast, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)

    not_utf8 = '{"type": "header"}\n"caf\xe9"\n'.encode("latin-1")
    latin1 = client.post("/api/v1/import", data=not_utf8, content_type=NDJSON)
    empty = client.post("/api/v1/import", data=b"", content_type=NDJSON)

    assert latin1.status_code == 400 and "not UTF-8" in latin1.json()["detail"] and "line 2" in latin1.json()["detail"]
    assert empty.status_code == 400 and "empty" in empty.json()["errors"]["text"][0]
    assert not Memory.objects.exists()


def test_a_body_import_above_the_limit_is_the_same_413(cast, token_client, settings):
    settings.IMPORT_MAX_BYTES = 1024

    response = token_client(cast.org_a, scopes=ADMIN).post("/api/v1/import", data=b"x" * 2000, content_type=NDJSON)

    assert response.status_code == 413 and response.json()["code"] == "too_large"
    assert "import_memories" in response.json()["detail"]


def test_unknown_query_parameters_and_query_options_beside_a_json_body_are_400s(cast, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)

    unknown = client.post("/api/v1/import?dryrun=true", data=b'{"type": "header"}\n', content_type=NDJSON)
    beside_json = client.post("/api/v1/import?dry_run=true", {"text": "## A\nB"}, format="json")

    assert unknown.status_code == 400 and "dry_run" in unknown.json()["errors"]["dryrun"][0]
    assert beside_json.status_code == 400 and "dry_run" in beside_json.json()["errors"]
    assert not Memory.objects.exists()


@pytest.mark.cross_tenant("api-import")
def test_a_body_import_into_another_orgs_project_is_a_404(cast, memories, token_client):
    client = token_client(cast.org_a, scopes=ADMIN)

    response = client.post("/api/v1/import?project=billing", data=_export(client), content_type=NDJSON)

    assert response.status_code == 404
    assert Memory.objects.filter(organization=cast.org_b).count() == 1


def test_the_schema_documents_both_forms_of_the_import(cast, token_client):
    schema = token_client(cast.org_a).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/import"]["post"]

    assert set(operation["requestBody"]["content"]) == {"application/json", NDJSON}
    assert operation["requestBody"]["content"][NDJSON]["schema"]["type"] == "string"
    assert {p["name"] for p in operation["parameters"]} >= {"format", "project", "dry_run", "source_name"}
