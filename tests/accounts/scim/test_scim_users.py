"""SCIM Users (RFC 7644 section 3): provisioning an org's members — create, get, list with a filter and
pages, replace, PATCH, DELETE — with the SCIM token as the only source of the tenant, and every refusal
a SCIM error with its status."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import ApiToken, AuditEvent, Membership
from accounts.services import token_create
from tests.accounts.scim.scim_client import (
    Scim,
    assert_scim_error,
    patch_body,
    scim_for,
    user_body,
)

pytestmark = pytest.mark.django_db


def test_creating_a_user_makes_a_member_of_the_tokens_organization(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    response = scim.post(
        "/Users",
        user_body("Dana@Acme.test", externalId="00u1", name={"givenName": "Dana", "familyName": "Scully"}),
    )
    assert response.status_code == 201, response.content
    body = response.json()
    membership = Membership.objects.get(organization=cast.org_a, user__email="dana@acme.test")
    assert body["id"] == str(membership.pk)
    assert body["userName"] == "dana@acme.test"
    assert body["active"] is True
    assert body["externalId"] == "00u1"
    assert body["name"] == {"givenName": "Dana", "familyName": "Scully"}
    assert response["Location"].endswith(f"/scim/v2/Users/{membership.pk}")
    assert membership.role == Membership.ROLE_MEMBER
    assert membership.user.first_name == "Dana"
    event = AuditEvent.objects.get(organization=cast.org_a, verb="scim.user_create")
    assert event.actor.startswith("scim:rbscim_")
    assert not Membership.objects.filter(organization=cast.org_b, user__email="dana@acme.test").exists()


def test_a_user_read_back_is_the_one_created(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    made = scim.post("/Users", user_body("dana@acme.test")).json()
    got = scim.get(f"/Users/{made['id']}")
    assert got.status_code == 200
    assert got.json()["userName"] == "dana@acme.test"
    assert got.json()["meta"]["resourceType"] == "User"


def test_an_existing_active_member_is_a_409_uniqueness(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert_scim_error(scim.post("/Users", user_body("bob@acme.test")), 409, "uniqueness")


def test_a_person_of_another_org_gets_a_membership_here_on_the_same_account(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert scim.post("/Users", user_body("charlie@globex.test")).status_code == 201
    assert set(Membership.objects.filter(user=cast.charlie).values_list("organization__slug", flat=True)) == {
        "acme",
        "globex",
    }


def test_filter_by_username_finds_the_one_member_case_insensitively(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    response = scim.get("/Users", filter='userName eq "BOB@acme.test"')
    assert response.status_code == 200
    body = response.json()
    assert body["totalResults"] == 1
    assert [r["userName"] for r in body["Resources"]] == ["bob@acme.test"]


def test_filter_finds_nobody_of_another_organization(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    body = scim.get("/Users", filter='userName eq "charlie@globex.test"').json()
    assert body["totalResults"] == 0
    assert body.get("Resources", []) == []


def test_filters_combine_and_read_active_and_external_ids(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test", externalId="ext-dana")).json()
    scim.patch(f"/Users/{dana['id']}", patch_body({"op": "replace", "path": "active", "value": False}))
    inactive = scim.get("/Users", filter="active eq false").json()
    assert [r["userName"] for r in inactive["Resources"]] == ["dana@acme.test"]
    both = scim.get("/Users", filter='externalId eq "ext-dana" and userName sw "dana"').json()
    assert both["totalResults"] == 1
    either = scim.get("/Users", filter='userName eq "alice@acme.test" or userName eq "bob@acme.test"').json()
    assert sorted(r["userName"] for r in either["Resources"]) == ["alice@acme.test", "bob@acme.test"]


def test_listing_pages_with_start_index_and_count(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    for n in range(5):
        assert scim.post("/Users", user_body(f"person{n}@acme.test")).status_code == 201
    first = scim.get("/Users", startIndex=1, count=3).json()
    second = scim.get("/Users", startIndex=4, count=3).json()
    assert first["totalResults"] == second["totalResults"] == 7  # alice, bob and five provisioned
    assert (first["startIndex"], first["itemsPerPage"]) == (1, 3)
    assert (second["startIndex"], second["itemsPerPage"]) == (4, 3)
    names = [r["userName"] for r in first["Resources"] + second["Resources"]]
    assert len(names) == len(set(names)) == 6
    assert scim.get("/Users", count=0).json()["totalResults"] == 7


def test_an_unsupported_or_malformed_filter_is_a_400_invalid_filter(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert_scim_error(scim.get("/Users", filter="userName eq"), 400, "invalidFilter")
    assert_scim_error(scim.get("/Users", filter='title eq "boss"'), 400, "invalidFilter")
    assert_scim_error(scim.get("/Users", filter='userName gt "a"'), 400, "invalidFilter")


def test_patch_active_false_deactivates_and_revokes_the_persons_tokens(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    membership = Membership.objects.get(pk=dana["id"])
    token, _ = token_create(organization=cast.org_a, label="dana's laptop", created_by=membership.user)
    response = scim.patch(f"/Users/{dana['id']}", patch_body({"op": "replace", "value": {"active": False}}))
    assert response.status_code == 200, response.content
    assert response.json()["active"] is False
    membership.refresh_from_db()
    assert membership.deactivated_at is not None
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="member.deactivate").count() == 1


def test_patch_active_true_reactivates(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    scim.patch(f"/Users/{dana['id']}", patch_body({"op": "replace", "path": "active", "value": False}))
    response = scim.patch(f"/Users/{dana['id']}", patch_body({"op": "replace", "path": "active", "value": True}))
    assert response.json()["active"] is True
    assert Membership.objects.get(pk=dana["id"]).is_active
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="member.reactivate").count() == 1


def test_put_replaces_names_and_external_id(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    response = scim.put(
        f"/Users/{dana['id']}",
        user_body("dana@acme.test", externalId="new-ext", name={"givenName": "Dana", "familyName": "K"}),
    )
    assert response.status_code == 200, response.content
    assert response.json()["externalId"] == "new-ext"
    assert response.json()["name"]["familyName"] == "K"
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="scim.user_update").exists()


def test_put_with_another_username_is_a_400_mutability_and_changes_nothing(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    assert_scim_error(scim.put(f"/Users/{dana['id']}", user_body("other@acme.test")), 400, "mutability")
    assert Membership.objects.get(pk=dana["id"]).user.email == "dana@acme.test"


def test_a_persons_name_is_not_rewritten_by_one_org_when_they_belong_to_another(cast: Any) -> None:
    cast.charlie.first_name = "Charlie"
    cast.charlie.save()
    scim = scim_for(cast.org_a)
    made = scim.post("/Users", user_body("charlie@globex.test", name={"givenName": "Mallory"})).json()
    scim.put(f"/Users/{made['id']}", user_body("charlie@globex.test", name={"givenName": "Mallory"}))
    cast.charlie.refresh_from_db()
    assert cast.charlie.first_name == "Charlie"


def test_delete_deactivates_and_keeps_the_member_listed_inactive(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    assert scim.delete(f"/Users/{dana['id']}").status_code == 204
    assert Membership.objects.get(pk=dana["id"]).deactivated_at is not None
    assert scim.get(f"/Users/{dana['id']}").json()["active"] is False


def test_provisioning_a_deactivated_person_again_reactivates_them(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    scim.delete(f"/Users/{dana['id']}")
    again = scim.post("/Users", user_body("dana@acme.test"))
    assert again.status_code == 201
    assert again.json()["id"] == dana["id"]
    assert again.json()["active"] is True


@pytest.mark.parametrize(
    ("method", "raw_body", "scim_type"),
    [
        ("post", "{not json", "invalidSyntax"),
        ("post", "[1, 2]", "invalidSyntax"),
        ("post", '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]}', None),
        ("post", '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "no-at-sign"}', None),
        ("post", '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": 12, "active": "x"}', None),
        ("post", '{"schemas": ["urn:example:bogus"], "userName": "x@acme.test"}', None),
        ("post", '"\\u00e9"', "invalidSyntax"),
    ],
)
def test_a_malformed_user_body_is_a_scim_400_never_a_500(cast: Any, method: str, raw_body: str, scim_type: Any) -> None:
    scim = scim_for(cast.org_a)
    before = Membership.objects.count()
    assert_scim_error(getattr(scim, method)("/Users", raw_body=raw_body), 400, scim_type)
    assert Membership.objects.count() == before


@pytest.mark.parametrize(
    "raw_body",
    [
        '{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"]}',
        '{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "explode"}]}',
        '{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], '
        '"Operations": [{"op": "replace", "path": "nope", "value": 1}]}',
        '{"Operations": "nope"}',
        "garbage",
    ],
)
def test_a_malformed_patch_is_a_scim_400_and_changes_nothing(cast: Any, raw_body: str) -> None:
    scim = scim_for(cast.org_a)
    bob = Membership.objects.get(user=cast.bob)
    response = scim.patch(f"/Users/{bob.pk}", raw_body=raw_body)
    assert_scim_error(response, 400)
    bob.refresh_from_db()
    assert bob.is_active


def test_no_token_or_a_revoked_one_is_a_scim_401(cast: Any) -> None:
    assert_scim_error(Scim(None).get("/Users"), 401)
    assert_scim_error(Scim("rbscim_not-a-real-token").get("/Users"), 401)
    from accounts.models import ScimToken
    from accounts.scim.services_tokens import scim_token_create, scim_token_revoke

    token, raw = scim_token_create(organization=cast.org_a, label="old", actor=None)
    scim_token_revoke(token=ScimToken.objects.get(pk=token.pk), actor=None)
    response = Scim(raw).get("/Users")
    assert_scim_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_api_token_opens_no_scim_endpoint(cast: Any) -> None:
    _, raw = token_create(organization=cast.org_a, label="agent")
    assert_scim_error(Scim(raw).get("/Users"), 401)


def test_an_unserved_method_is_a_scim_405(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert_scim_error(scim.delete("/Users"), 405)


@pytest.mark.cross_tenant("scim-users", "scim-user")
def test_org_bs_token_cannot_see_or_touch_org_as_users(cast: Any) -> None:
    scim_a, scim_b = scim_for(cast.org_a), scim_for(cast.org_b)
    dana = scim_a.post("/Users", user_body("dana@acme.test")).json()
    bob = Membership.objects.get(user=cast.bob)
    for user_id in (dana["id"], str(bob.pk)):
        assert_scim_error(scim_b.get(f"/Users/{user_id}"), 404)
        assert_scim_error(scim_b.put(f"/Users/{user_id}", user_body("x@globex.test")), 404)
        assert_scim_error(
            scim_b.patch(f"/Users/{user_id}", patch_body({"op": "replace", "path": "active", "value": False})), 404
        )
        assert_scim_error(scim_b.delete(f"/Users/{user_id}"), 404)
    listed = scim_b.get("/Users").json()
    assert [r["userName"] for r in listed["Resources"]] == ["charlie@globex.test"]
    assert Membership.objects.get(pk=dana["id"]).is_active and Membership.objects.get(pk=bob.pk).is_active
    assert not AuditEvent.objects.filter(
        organization=cast.org_a, actor__startswith="scim:", verb="member.deactivate"
    ).exists()


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "replace", "value": {"active": False}},  # Okta
        {"op": "Replace", "path": "active", "value": "False"},  # Entra ID sends a capitalised op and a string
    ],
)
def test_each_identity_providers_deactivation_shape_is_understood(cast: Any, operation: dict[str, Any]) -> None:
    scim = scim_for(cast.org_a)
    dana = scim.post("/Users", user_body("dana@acme.test")).json()
    response = scim.patch(f"/Users/{dana['id']}", patch_body(operation))
    assert response.status_code == 200, response.content
    assert not Membership.objects.get(pk=dana["id"]).is_active


def test_scim_writes_need_no_csrf_token_since_they_authenticate_by_bearer(cast: Any) -> None:
    from django.test import Client

    from accounts.scim.services_tokens import scim_token_create

    _, raw = scim_token_create(organization=cast.org_a, label="Okta", actor=None)
    strict = Client(enforce_csrf_checks=True)
    response = strict.post(
        "/scim/v2/Users",
        data='{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "dana@acme.test"}',
        content_type="application/scim+json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/Users", {"startIndex": "abc"}, 400),
        ("/Users", {"count": "many"}, 400),
        ("/Users", {"attributes": "not an attribute!"}, 400),
        ("/Users/abc", {}, 404),
        ("/Users/99999999999999999999999", {}, 404),
        ("/Users/-1", {}, 404),
        ("/Groups/1.5", {}, 404),
        ("/Groups", {"filter": 'members[value eq "99999999999999999999999"]'}, 200),
        ("/Users", {"filter": 'id eq "99999999999999999999999"'}, 200),
    ],
)
def test_odd_queries_and_ids_are_scim_errors_never_500s(
    cast: Any, path: str, params: dict[str, str], status: int
) -> None:
    response = scim_for(cast.org_a).get(path, **params)
    assert response.status_code == status, response.content
    if status != 200:
        assert_scim_error(response, status)


def test_out_of_range_paging_is_clamped_as_rfc_7644_says(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    body = scim.get("/Users", startIndex=-5, count=100000).json()
    assert body["startIndex"] == 1
    assert body["itemsPerPage"] == body["totalResults"] == 2
    assert scim.get("/Users", count=-3).json()["itemsPerPage"] == 0
