"""The dashboard's first snippet: an org-wide token in an org with one project records and submits
without naming a project (docs/tenancy.md#who-owns-what)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import manage_ok
from tests.e2e.harness import Service, call, mcp_client, token_from, unique
from tests.e2e.test_mcp_agent import MODES, submit_and_wait_for_distillation

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def solo_token(service: Service) -> str:
    """An org with exactly one project and a token for the whole org, made with the commands run.sh prints."""
    manage_ok(service, "create_org", "solo", "--plan", "free", "--owner-email", "solo@example.com")
    manage_ok(service, "create_project", "solo", "only-app")
    return token_from(manage_ok(service, "create_token", "solo", "--label", "first-snippet"))


@pytest.mark.parametrize("mode", MODES)
async def test_an_org_wide_token_of_a_one_project_org_records_and_submits_without_a_project(
    service: Service, solo_token: str, mode: str
) -> None:
    marker = unique()
    async with mcp_client(service, solo_token, mode) as client:
        recorded = await call(
            client,
            "memory_record",
            {
                "title": f"Pin the toolchain version {marker}",
                "description": "When CI and laptops disagree",
                "content": "Pin the toolchain in the repository so every machine builds alike.",
                "outcome": "success",
                "tags": ["ci"],
            },
        )
        assert (await call(client, "memory_get", {"memory_id": recorded["id"]}))["project"] == "only-app"
        session = await submit_and_wait_for_distillation(client, marker, service)
        assert session["memories"], session
