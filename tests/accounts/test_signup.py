from django.contrib.auth import get_user_model

from accounts.models import Membership


def test_signing_up_creates_an_owned_free_org_and_logs_the_user_in(client, db):
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


def test_two_signups_with_the_same_local_part_get_distinct_orgs(client, db):
    for email in ("sam@one.test", "sam@two.test"):
        client.post(
            "/accounts/signup/",
            {"email": email, "password1": "another-long-passphrase", "password2": "another-long-passphrase"},
        )
        client.logout()
    slugs = set(Membership.objects.values_list("organization__slug", flat=True))
    assert len(slugs) == 2
