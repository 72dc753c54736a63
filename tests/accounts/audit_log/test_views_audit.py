"""Settings → Audit log (accounts/audit_log/views.py): the page with its filters and pages, and the CSV and JSON
export of what it shows; owners and admins only, their own organization only, the export itself audited
(docs/identity.md#the-audit-log)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from accounts.models import AuditEvent, Membership
from accounts.services import audit_record
from tests.factories import MembershipFactory, UserFactory

PAGE = "/settings/audit/"
EXPORT = "/settings/audit/export/"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def row(org, verb: str, *, minutes: int, actor=None, data=None) -> AuditEvent:
    event = audit_record(organization=org, actor=actor, verb=verb, data=data)
    AuditEvent.objects.filter(pk=event.pk).update(created_at=T0 + timedelta(minutes=minutes))
    return event


@pytest.fixture
def owner(client, cast):
    client.force_login(cast.alice)  # signs in: an auth.sign_in row, which the log fixture clears
    return client


@pytest.fixture
def log(cast, owner):
    AuditEvent.objects.all().delete()
    alice = cast.principal(cast.alice)
    rows = [row(cast.org_a, "token.create", minutes=minute, actor=alice) for minute in range(55)]
    rows.append(row(cast.org_a, "webhook.delete", minutes=60, actor=alice, data={"url": "=HYPERLINK(evil)"}))
    row(cast.org_b, "token.create", minutes=30, actor=cast.principal(cast.charlie), data={"secret_of": "globex"})
    return rows


def body(response) -> str:
    return response.content.decode()


def test_the_owner_sees_the_log_newest_first_fifty_a_page(owner, log):
    response = owner.get(PAGE)
    assert response.status_code == 200
    text = body(response).split("<tbody>")[1]
    assert text.index("webhook.delete") < text.index("token.create")
    assert text.count("<tr>") == 50 and "Page 1 of 2" in text
    second = body(owner.get(PAGE, {"page": 2}))
    assert second.count("<tr>") == 1 + 6


def test_a_filter_narrows_the_page_and_an_htmx_request_gets_the_results_alone(owner, log):
    response = owner.get(PAGE, {"verb": "webhook.delete"}, HTTP_HX_REQUEST="true")
    text = body(response)
    assert response.status_code == 200 and text.lstrip().startswith('<section id="results"')
    assert "webhook.delete" in text and "token.create" not in text.split("</table>")[0].split("<tbody>")[1]


def test_a_range_of_days_takes_both_days_whole(owner, log):
    text = body(owner.get(PAGE, {"since": "2026-11-20", "until": "2026-11-20"}))
    assert text.count("<tr>") == 1 + 50
    assert "No rows match these filters" in body(owner.get(PAGE, {"since": "2026-11-21"}))


def test_a_malformed_filter_says_what_to_fix(owner, log):
    response = owner.get(PAGE, {"since": "yesterday-ish"})
    assert response.status_code == 400 and "ISO 8601" in body(response)


def test_an_empty_log_says_what_will_appear(owner, cast):
    AuditEvent.objects.all().delete()
    assert "Nothing recorded yet" in body(owner.get(PAGE))


@pytest.mark.parametrize("role", [Membership.ROLE_VIEWER, Membership.ROLE_MEMBER])
def test_viewers_and_members_are_refused_the_page_and_the_export(client, cast, role, log):
    user = UserFactory(email=f"{role}@acme.test")
    MembershipFactory(user=user, organization=cast.org_a, role=role)
    client.force_login(user)
    assert client.get(PAGE).status_code == 403
    assert client.post(EXPORT, {"format": "csv"}).status_code == 403


def test_an_admin_sees_the_page_and_its_link_in_the_settings_menu(client, cast, log):
    user = UserFactory(email="ada@acme.test")
    MembershipFactory(user=user, organization=cast.org_a, role=Membership.ROLE_ADMIN)
    client.force_login(user)
    response = client.get(PAGE)
    assert response.status_code == 200 and 'href="/settings/audit/"' in body(response)


def test_the_csv_export_holds_the_filtered_rows_with_formulas_defused(owner, log):
    response = owner.post(EXPORT, {"format": "csv", "verb": "webhook.delete"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"] and response["Audit-Export-Truncated"] == "false"
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["verb"] for r in rows] == ["webhook.delete"]
    assert rows[0]["actor"] == "user:alice@acme.test"
    assert json.loads(rows[0]["data"]) == {"url": "=HYPERLINK(evil)"}  # inside JSON text: no formula


def test_the_json_export_is_one_document_and_is_itself_audited(owner, cast, log):
    response = owner.post(EXPORT, {"format": "json", "category": "token"})
    document = json.loads(b"".join(response.streaming_content))
    assert document["organization"] == "acme" and document["filters"] == {"category": "token"}
    assert len(document["events"]) == 55 and {e["verb"] for e in document["events"]} == {"token.create"}
    (audited,) = AuditEvent.objects.filter(organization=cast.org_a, verb="audit.export")
    assert audited.actor == "user:alice@acme.test"
    assert audited.data == {"format": "json", "filters": {"category": "token"}, "truncated": False}


def test_an_export_stops_at_its_bound_and_says_so(owner, log, settings):
    settings.AUDIT_EXPORT_MAX_ROWS = 10
    response = owner.post(EXPORT, {"format": "json"})
    document = json.loads(b"".join(response.streaming_content))
    assert len(document["events"]) == 10 and document["truncated"] is True
    assert response["Audit-Export-Truncated"] == "true"
    assert document["events"][0]["verb"] == "webhook.delete"  # the newest are kept


def test_an_unknown_export_format_is_a_400(owner, log):
    response = owner.post(EXPORT, {"format": "xlsx"})
    assert response.status_code == 400 and "csv, json" in body(response)


@pytest.mark.cross_tenant("settings-audit", "settings-audit-export")
def test_another_organizations_rows_are_neither_shown_nor_exported(owner, log):
    assert "globex" not in body(owner.get(PAGE, {"verb": "token.create", "page": 2}))
    exported = b"".join(owner.post(EXPORT, {"format": "csv"}).streaming_content).decode()
    assert "globex" not in exported and "charlie" not in exported
    assert len(list(csv.DictReader(io.StringIO(exported)))) == 56


def test_the_export_is_a_post_never_a_get(owner, log):
    assert owner.get(EXPORT, {"format": "csv"}).status_code == 405
    assert not AuditEvent.objects.filter(verb="audit.export").exists()
