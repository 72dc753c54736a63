from django.contrib.auth import get_user_model

from accounts.access import principal_for_token
from accounts.models import Membership, Project
from accounts.tokens.services import token_create
from memories.core.services import memory_record


def test_signing_up_creates_an_owned_org_on_the_default_plan_and_logs_the_user_in(client, db, settings):
    # the hosted service's choice (tests/accounts/plans/test_default_plan.py has the rest)
    settings.DEFAULT_PLAN = "free"
    response = client.post(
        "/accounts/signup/",
        {
            "email": "dana@newco.test",
            "password1": "a-long-unusual-passphrase",
            "password2": "a-long-unusual-passphrase",
        },
    )
    assert response.status_code == 302
    user = get_user_model().objects.get(email="dana@newco.test")
    membership = Membership.objects.select_related("organization").get(user=user)
    assert membership.role == "owner"
    assert membership.organization.plan == "free"
    assert client.session.get("_auth_user_id") == str(user.pk)


def test_a_new_org_starts_with_one_project_so_an_org_wide_token_can_record_at_once(client, db):
    client.post(
        "/accounts/signup/",
        {"email": "erin@newco.test", "password1": "an-unusual-passphrase", "password2": "an-unusual-passphrase"},
    )
    organization = Membership.objects.get(user__email="erin@newco.test").organization
    assert list(Project.objects.filter(organization=organization).values_list("slug", flat=True)) == ["default"]
    token, _ = token_create(organization=organization, label="laptop")  # org-wide, the dashboard's default
    memory = memory_record(
        principal=principal_for_token(token),
        title="Run the linter before pushing",
        description="CI fails on lint errors",
        content="Run ruff check locally before every push; CI rejects lint errors.",
        outcome="success",
    )
    assert memory.project is not None and memory.project.slug == "default"


def test_two_signups_with_the_same_local_part_get_distinct_orgs(client, db):
    for email in ("sam@one.test", "sam@two.test"):
        client.post(
            "/accounts/signup/",
            {"email": email, "password1": "another-long-passphrase", "password2": "another-long-passphrase"},
        )
        client.logout()
    slugs = set(Membership.objects.values_list("organization__slug", flat=True))
    assert len(slugs) == 2
