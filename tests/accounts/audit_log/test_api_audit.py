"""``GET /api/v1/audit`` (accounts/audit_log/api.py): the organization's log newest first, paged by cursor,
filtered by query parameters; admins with a token for the whole organization only; never another
organization's rows (docs/identity.md#the-audit-log)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from accounts.models import AuditEvent
from accounts.services import audit_record

URL = "/api/v1/audit"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def row(org, verb: str, *, minutes: int, actor=None, target=None, data=None, actor_label=None) -> AuditEvent:
    event = audit_record(organization=org, actor=actor, verb=verb, target=target, data=data, actor_label=actor_label)
    AuditEvent.objects.filter(pk=event.pk).update(created_at=T0 + timedelta(minutes=minutes))
    event.refresh_from_db()
    return event


@pytest.fixture
def admin(cast, token_client):
    return token_client(cast.org_a, scopes=["admin"])


@pytest.fixture
def log(cast, admin):
    """Seven rows of acme, one a minute, and one of globex (and nothing else: the admin token's own row goes)."""
    AuditEvent.objects.all().delete()
    alice = cast.principal(cast.alice)
    rows = [
        row(cast.org_a, "auth.sign_in", minutes=0, actor=alice, target=cast.alice),
        row(cast.org_a, "token.create", minutes=1, actor=alice),
        row(cast.org_a, "auth.sign_in_failed", minutes=2, target=cast.alice, actor_label="anonymous"),
        row(cast.org_a, "webhook.create", minutes=3, actor=alice),
        row(cast.org_a, "auth.sign_out", minutes=4, actor=alice, target=cast.alice),
        row(cast.org_a, "membership.role_change", minutes=5, actor=alice, target=cast.bob),
        row(cast.org_a, "token.revoke", minutes=6),
    ]
    row(cast.org_b, "token.create", minutes=3, actor=cast.principal(cast.charlie))
    return rows


def ids(body) -> list[int]:
    return [item["id"] for item in body["results"]]


def test_the_log_is_listed_newest_first_with_who_what_and_from_where(admin, log):
    response = admin.get(URL)
    assert response.status_code == 200, response.content
    body = response.json()
    assert ids(body) == [event.pk for event in reversed(log)] and body["next"] is None
    first = body["results"][-1]
    assert first["verb"] == "auth.sign_in" and first["actor"] == "user:alice@acme.test"
    assert first["target_type"] == "user" and set(first) >= {"ip", "client", "data", "created_at"}


def test_the_cursor_walks_every_row_once_even_while_new_rows_arrive(admin, cast, log):
    seen: list[int] = []
    body = admin.get(URL, {"page_size": 3}).json()
    seen += ids(body)
    row(cast.org_a, "team.create", minutes=30)  # newer than everything: must not shift the pages
    pages = 1
    while body["next"]:
        cursor = parse_qs(urlsplit(body["next"]).query)
        assert cursor["page_size"] == ["3"]
        body = admin.get(URL, {"page_size": 3, "cursor": cursor["cursor"][0]}).json()
        seen += ids(body)
        pages += 1
    assert pages == 3 and seen == [event.pk for event in reversed(log)]


def test_rows_of_the_same_moment_are_neither_lost_nor_repeated_across_pages(admin, cast):
    AuditEvent.objects.all().delete()
    same = [row(cast.org_a, "memory.tier", minutes=0) for _ in range(5)]
    seen, url = [], f"{URL}?page_size=2"
    while url:
        body = admin.get(url).json()
        seen += ids(body)
        url = body["next"]
    assert seen == sorted((event.pk for event in same), reverse=True)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"verb": "token.create"}, ["token.create"]),
        ({"category": "auth"}, ["auth.sign_out", "auth.sign_in_failed", "auth.sign_in"]),
        (
            {"actor": "ALICE@acme"},
            ["membership.role_change", "auth.sign_out", "webhook.create", "token.create", "auth.sign_in"],
        ),
        ({"target_type": "user", "category": "auth", "actor": "anonymous"}, ["auth.sign_in_failed"]),
        ({"since": "2026-11-20T09:02:00Z", "until": "2026-11-20T09:04:00Z"}, ["webhook.create", "auth.sign_in_failed"]),
    ],
)
def test_filters_narrow_the_log(admin, log, query, expected):
    body = admin.get(URL, query).json()  # since inclusive, until exclusive
    assert [item["verb"] for item in body["results"]] == expected


def test_a_target_filter_takes_one_object(admin, cast, log):
    body = admin.get(URL, {"target_type": "user", "target_id": str(cast.bob.pk)}).json()
    assert [item["verb"] for item in body["results"]] == ["membership.role_change"]


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ({"verb": "Auth Sign In"}, 400, "verb"),
        ({"category": "auth.sign_in"}, 400, "category"),
        ({"since": "last tuesday"}, 400, "since"),
        ({"verbs": "auth.sign_in"}, 400, "verbs"),
        ({"page": "2"}, 400, "page"),
        ({"cursor": ""}, 400, "cursor"),
        ({"page_size": "0"}, 400, "page_size"),
        ({"cursor": "bm90LWEtY3Vyc29y"}, 422, "cursor"),
        ({"since": "2026-11-20T10:00:00Z", "until": "2026-11-20T09:00:00Z"}, 422, "until"),
    ],
)
def test_a_malformed_filter_or_cursor_is_refused_naming_it(admin, log, query, status, field):
    response = admin.get(URL, query)
    assert response.status_code == status, response.content
    body = response.json()
    assert field in body["errors"], body
    if status == 422:
        assert body["code"] in ("rejected_cursor", "rejected_range")


def test_a_token_without_the_admin_scope_is_refused(cast, token_client, log):
    member = token_client(cast.org_a, scopes=["memories:read", "memories:write"])
    assert member.get(URL).status_code == 403


def test_a_token_restricted_to_a_project_is_refused_even_with_the_admin_scope(cast, token_client, log):
    restricted = token_client(cast.org_a, scopes=["admin"], projects=[cast.project_a])
    assert restricted.get(URL).status_code == 403


@pytest.mark.cross_tenant("api-audit")
def test_another_organizations_rows_are_never_listed_nor_reachable_by_filter(cast, token_client, admin, log):
    globex_row = AuditEvent.objects.get(organization=cast.org_b)
    listed = admin.get(URL, {"page_size": 200}).json()
    assert globex_row.pk not in ids(listed) and len(ids(listed)) == len(log)
    assert admin.get(URL, {"actor": "charlie"}).json()["results"] == []
    globex = token_client(cast.org_b, scopes=["admin"])
    seen_by_globex = ids(globex.get(URL, {"page_size": 200}).json())
    assert globex_row.pk in seen_by_globex and not {event.pk for event in log} & set(seen_by_globex)


def test_the_endpoint_is_in_the_openapi_schema_with_its_cursor(api_client):
    operation = api_client.get("/api/schema/", {"format": "json"}).json()["paths"]["/api/v1/audit"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"cursor", "page_size", "verb", "category", "actor", "since", "until"} <= names and "page" not in names
