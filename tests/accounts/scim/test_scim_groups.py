"""SCIM Groups (RFC 7644): an identity provider's groups are the organization's teams — created,
listed, renamed, their members added and removed with PATCH, deleted — inside the token's org only."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Membership, Team, TeamMember
from tests.accounts.scim.scim_client import GROUP_SCHEMA, assert_scim_error, patch_body, scim_for
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _teams_plan(cast: Any) -> None:
    """Teams are a feature of the teams plan (accounts/plans/catalogue.py); both orgs are on it here."""
    for org in (cast.org_a, cast.org_b):
        org.plan = "teams"
        org.save(update_fields=["plan"])


def group_body(name: str, *member_ids: Any) -> dict[str, Any]:
    return {"schemas": [GROUP_SCHEMA], "displayName": name, "members": [{"value": str(m)} for m in member_ids]}


def _member(user: Any) -> Membership:
    return Membership.objects.get(user=user)


def test_creating_a_group_makes_a_team_with_its_members(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    bob = _member(cast.bob)
    response = scim.post("/Groups", group_body("Platform Engineers", bob.pk))
    assert response.status_code == 201, response.content
    body = response.json()
    team = Team.objects.get(organization=cast.org_a, pk=body["id"])
    assert (team.slug, team.name) == ("platform-engineers", "Platform Engineers")
    assert [m["value"] for m in body["members"]] == [str(bob.pk)]
    assert body["members"][0]["display"] == "bob@acme.test"
    assert list(TeamMember.objects.filter(team=team).values_list("membership_id", flat=True)) == [bob.pk]
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="scim.group_create").exists()


def test_a_group_with_a_taken_name_is_a_409(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert scim.post("/Groups", group_body("Platform")).status_code == 201
    assert_scim_error(scim.post("/Groups", group_body("Platform")), 409, "uniqueness")


def test_a_group_without_a_display_name_is_a_400(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    assert_scim_error(scim.post("/Groups", {"schemas": [GROUP_SCHEMA]}), 400)
    assert_scim_error(scim.post("/Groups", raw_body="{"), 400, "invalidSyntax")
    assert not Team.objects.filter(organization=cast.org_a).exists()


def test_patch_adds_and_removes_members(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    alice, bob = _member(cast.alice), _member(cast.bob)
    group = scim.post("/Groups", group_body("Platform", bob.pk)).json()
    added = scim.patch(
        f"/Groups/{group['id']}", patch_body({"op": "add", "path": "members", "value": [{"value": str(alice.pk)}]})
    )
    assert added.status_code == 200, added.content
    assert sorted(m["value"] for m in added.json()["members"]) == sorted([str(alice.pk), str(bob.pk)])
    removed = scim.patch(
        f"/Groups/{group['id']}", patch_body({"op": "remove", "path": f'members[value eq "{bob.pk}"]'})
    )
    assert removed.status_code == 200, removed.content
    assert [m["value"] for m in removed.json()["members"]] == [str(alice.pk)]
    assert list(TeamMember.objects.filter(team_id=group["id"]).values_list("membership_id", flat=True)) == [alice.pk]
    update = AuditEvent.objects.filter(organization=cast.org_a, verb="scim.group_update").first()
    assert update is not None and update.data["members"]["removed"] == [str(bob.pk)]


def test_patch_renames_and_put_replaces_members(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    alice, bob = _member(cast.alice), _member(cast.bob)
    group = scim.post("/Groups", group_body("Platform", bob.pk)).json()
    renamed = scim.patch(
        f"/Groups/{group['id']}", patch_body({"op": "replace", "path": "displayName", "value": "Infra"})
    )
    assert renamed.json()["displayName"] == "Infra"
    replaced = scim.put(f"/Groups/{group['id']}", group_body("Infra", alice.pk))
    assert replaced.status_code == 200
    assert [m["value"] for m in replaced.json()["members"]] == [str(alice.pk)]


def test_list_and_filter_groups_by_display_name_and_member(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    bob = _member(cast.bob)
    scim.post("/Groups", group_body("Platform", bob.pk))
    scim.post("/Groups", group_body("Design"))
    assert scim.get("/Groups").json()["totalResults"] == 2
    by_name = scim.get("/Groups", filter='displayName eq "design"').json()
    assert [g["displayName"] for g in by_name["Resources"]] == ["Design"]
    by_member = scim.get("/Groups", filter=f'members[value eq "{bob.pk}"]').json()
    assert [g["displayName"] for g in by_member["Resources"]] == ["Platform"]


def test_a_member_of_another_org_cannot_join_a_group(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    charlie = _member(cast.charlie)
    assert_scim_error(scim.post("/Groups", group_body("Platform", charlie.pk)), 400, "invalidValue")
    assert_scim_error(scim.post("/Groups", group_body("Platform", "not-a-number")), 400, "invalidValue")
    assert not Team.objects.filter(organization=cast.org_a).exists()


def test_delete_removes_the_team_but_not_one_holding_projects(cast: Any) -> None:
    scim = scim_for(cast.org_a)
    empty = scim.post("/Groups", group_body("Empty")).json()
    assert scim.delete(f"/Groups/{empty['id']}").status_code == 204
    assert not Team.objects.filter(pk=empty["id"]).exists()
    busy = scim.post("/Groups", group_body("Busy")).json()
    ProjectFactory(organization=cast.org_a, slug="busy-app", team=Team.objects.get(pk=busy["id"]))
    assert_scim_error(scim.delete(f"/Groups/{busy['id']}"), 409)
    assert Team.objects.filter(pk=busy["id"]).exists()


def test_a_team_restricting_a_token_is_not_deleted(cast: Any) -> None:
    from accounts.services import token_create

    scim = scim_for(cast.org_a)
    group = scim.post("/Groups", group_body("Restricted")).json()
    team = Team.objects.get(pk=group["id"])
    token_create(organization=cast.org_a, label="team token", teams=[team])
    assert_scim_error(scim.delete(f"/Groups/{group['id']}"), 409)
    assert Team.objects.filter(pk=team.pk).exists()


@pytest.mark.cross_tenant("scim-groups", "scim-group")
def test_org_bs_token_cannot_see_or_touch_org_as_groups(cast: Any) -> None:
    scim_a, scim_b = scim_for(cast.org_a), scim_for(cast.org_b)
    group = scim_a.post("/Groups", group_body("Platform", _member(cast.bob).pk)).json()
    path = f"/Groups/{group['id']}"
    assert_scim_error(scim_b.get(path), 404)
    assert_scim_error(scim_b.put(path, group_body("Mine", _member(cast.charlie).pk)), 404)
    assert_scim_error(scim_b.patch(path, patch_body({"op": "remove", "path": "members"})), 404)
    assert_scim_error(scim_b.delete(path), 404)
    assert scim_b.get("/Groups").json()["totalResults"] == 0
    assert scim_b.get("/Groups", filter='displayName eq "Platform"').json()["totalResults"] == 0
    team = Team.objects.get(pk=group["id"])
    assert team.name == "Platform"
    assert TeamMember.objects.filter(team=team).count() == 1


def test_on_a_plan_without_teams_a_group_is_a_403_naming_the_plan(cast: Any) -> None:
    cast.org_a.plan = "pro"
    cast.org_a.save(update_fields=["plan"])
    body = assert_scim_error(scim_for(cast.org_a).post("/Groups", group_body("Platform")), 403)
    assert "teams plan" in body["detail"]
    assert not Team.objects.filter(organization=cast.org_a).exists()


def test_listing_groups_reads_their_members_in_one_query_however_many_groups_the_page_holds(cast: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    scim = scim_for(cast.org_a)
    alice, bob = _member(cast.alice), _member(cast.bob)
    assert scim.post("/Groups", group_body("One", bob.pk)).status_code == 201

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = scim.get("/Groups")
        assert response.status_code == 200
        return len(captured.captured_queries)

    one = statements()
    for name in ("Two", "Three", "Four"):
        assert scim.post("/Groups", group_body(name, alice.pk, bob.pk)).status_code == 201
    assert statements() == one
    listed = {
        g["displayName"]: sorted(m["value"] for m in g["members"]) for g in scim.get("/Groups").json()["Resources"]
    }
    assert listed["One"] == [str(bob.pk)]
    assert listed["Four"] == sorted([str(alice.pk), str(bob.pk)])
