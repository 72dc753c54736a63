import pytest

from accounts.plans.catalogue import minimum_plan_for, plan_get
from tests.factories import OrganizationFactory


@pytest.mark.parametrize(
    ("plan", "manual", "scheduled"),
    [("free", False, False), ("pro", True, False), ("teams", True, True), ("enterprise", True, True)],
)
def test_consolidation_features_follow_the_plan(db, plan, manual, scheduled):
    org = OrganizationFactory(plan=plan)
    assert org.has_feature("consolidation.manual") is manual
    assert org.has_feature("consolidation.scheduled") is scheduled


def test_limits_are_plan_data_and_enterprise_is_unlimited(db):
    assert OrganizationFactory(plan="free").limit("projects") == 3
    assert OrganizationFactory(plan="enterprise").limit("memories") is None


def test_upgrade_messages_name_the_cheapest_plan_with_a_feature():
    assert minimum_plan_for("consolidation.manual") == "pro"
    assert minimum_plan_for("consolidation.scheduled") == "teams"
    with pytest.raises(ValueError, match="unknown plan"):
        plan_get("platinum")
