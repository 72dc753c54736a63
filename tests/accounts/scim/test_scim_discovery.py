"""SCIM discovery (RFC 7644 section 4): ServiceProviderConfig, ResourceTypes and Schemas, behind the SCIM
token and the same for every organization; anything else under /scim/v2/ is a SCIM 404."""

from __future__ import annotations

from typing import Any

import pytest

from tests.accounts.scim.scim_client import Scim, assert_scim_error, scim_for

pytestmark = pytest.mark.django_db


def test_the_service_provider_config_announces_patch_and_filter_but_no_bulk(cast: Any) -> None:
    body = scim_for(cast.org_a).get("/ServiceProviderConfig").json()
    assert body["patch"]["supported"] is True
    assert body["filter"] == {"supported": True, "maxResults": 200}
    assert body["bulk"]["supported"] is False
    assert body["authenticationSchemes"][0]["type"] == "oauthbearertoken"


def test_resource_types_are_users_and_groups(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    listing = scim.get("/ResourceTypes").json()
    assert sorted(r["endpoint"] for r in listing["Resources"]) == ["/Groups", "/Users"]
    assert scim.get("/ResourceTypes/User").json()["schema"] == "urn:ietf:params:scim:schemas:core:2.0:User"
    assert_scim_error(scim.get("/ResourceTypes/Nope"), 404)


def test_schemas_describe_the_user_and_group_attributes(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    listing = scim.get("/Schemas").json()
    assert {s["id"] for s in listing["Resources"]} == {
        "urn:ietf:params:scim:schemas:core:2.0:User",
        "urn:ietf:params:scim:schemas:core:2.0:Group",
    }
    user = scim.get("/Schemas/urn:ietf:params:scim:schemas:core:2.0:User").json()
    assert "userName" in [a["name"] for a in user["attributes"]]
    assert_scim_error(scim.get("/Schemas/urn:example:nope"), 404)


def test_discovery_needs_a_scim_token(cast: Any) -> None:
    assert_scim_error(Scim(None).get("/ServiceProviderConfig"), 401)


@pytest.mark.cross_tenant(
    "scim-service-provider-config",
    "scim-resource-types",
    "scim-resource-type",
    "scim-schemas",
    "scim-schema",
    "scim-not-found",
)
def test_discovery_is_the_same_for_every_org_and_names_none(cast: Any) -> None:
    a, b = scim_for(cast.org_a), scim_for(cast.org_b)
    for path in ("/ServiceProviderConfig", "/ResourceTypes", "/ResourceTypes/Group", "/Schemas"):
        body_a, body_b = a.get(path).content, b.get(path).content
        assert body_a == body_b
        assert b"acme" not in body_a and b"globex" not in body_a
    assert_scim_error(b.get("/Bulk"), 404)
    assert_scim_error(a.get("/Users/1/extra"), 404)
