"""What a sign-in through an organization's provider does: just-in-time membership, the role its groups
map to, audit rows; and the adapter's rule that a provider signs in its organization's domains only."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.socialaccount.models import SocialLogin

from accounts.models import AuditEvent, Membership
from accounts.sso.adapter import SocialAccountAdapter
from accounts.sso.services import sso_roles_set, sso_sign_in_complete
from reasoningbank.errors import LimitExceeded
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_first_sign_in_joins_with_the_mapped_role_and_later_groups_change_it(cast: Any, acme_sso: Any) -> None:
    sso_roles_set(
        principal=cast.principal(cast.alice),
        default_role="viewer",
        role_claim="groups",
        role_map="eng = member\nleads = admin",
    )
    dana = UserFactory(email="dana@acme.test")
    joined = sso_sign_in_complete(
        user=dana, social_app_id=acme_sso.social_app_id, claims={"userinfo": {"groups": ["eng"]}}
    )
    assert joined is not None and joined.organization == cast.org_a and joined.role == "member"
    event = AuditEvent.objects.get(verb="member.jit_join")
    assert event.data == {"user": "dana@acme.test", "role": "member", "groups": ["eng"]}
    again = sso_sign_in_complete(
        user=dana, social_app_id=acme_sso.social_app_id, claims={"userinfo": {"groups": ["eng", "leads"]}}
    )
    assert again is not None and again.role == "admin"
    assert AuditEvent.objects.get(verb="membership.role_change").data == {"from": "member", "to": "admin"}
    # groups that map to nothing leave the role as it is
    same = sso_sign_in_complete(user=dana, social_app_id=acme_sso.social_app_id, claims={"userinfo": {"groups": []}})
    assert same is not None and same.role == "admin"
    assert list(AuditEvent.objects.filter(verb="auth.sign_in").values_list("data", flat=True)) == [
        {"method": "sso", "protocol": "oidc"}
    ]


def test_no_mapped_group_joins_with_the_default_role_and_an_owner_is_never_demoted(cast: Any, acme_sso: Any) -> None:
    sso_roles_set(
        principal=cast.principal(cast.alice), default_role="viewer", role_claim="groups", role_map="eng = member"
    )
    erin = UserFactory(email="erin@acme.test")
    assert sso_sign_in_complete(user=erin, social_app_id=acme_sso.social_app_id, claims={}).role == "viewer"
    owner = sso_sign_in_complete(
        user=cast.alice, social_app_id=acme_sso.social_app_id, claims={"userinfo": {"groups": ["eng"]}}
    )
    assert owner is not None and owner.role == Membership.ROLE_OWNER


def test_a_full_organization_takes_no_new_member(cast: Any, acme_sso: Any, settings: Any) -> None:
    from accounts.models import Organization

    Organization.objects.filter(pk=cast.org_a.pk).update(plan="free")
    limit = Organization.objects.get(pk=cast.org_a.pk).limit("members")
    if limit is None:
        pytest.skip("the free plan has no member limit")
    for index in range(limit - Membership.objects.filter(organization=cast.org_a).count()):
        Membership.objects.create(organization=cast.org_a, user=UserFactory(email=f"m{index}@acme.test"))
    with pytest.raises(LimitExceeded, match="plan"):
        sso_sign_in_complete(user=UserFactory(email="late@acme.test"), social_app_id=acme_sso.social_app_id, claims={})
    assert not Membership.objects.filter(user__email="late@acme.test").exists()


def test_an_app_that_is_no_organizations_signs_nobody_into_one(cast: Any, acme_sso: Any) -> None:
    assert sso_sign_in_complete(user=cast.charlie, social_app_id=acme_sso.social_app_id + 999, claims={}) is None


def _login_for(app: Any, email: str) -> SocialLogin:
    from allauth.account.models import EmailAddress
    from allauth.socialaccount.models import SocialAccount
    from django.contrib.auth import get_user_model

    account = SocialAccount(provider=app.provider_id, uid=email)
    login = SocialLogin(
        user=get_user_model()(email=email),
        account=account,
        email_addresses=[EmailAddress(email=email, verified=True, primary=True)],
    )
    login.provider = app.get_provider(None)  # type: ignore[misc]
    return login


def test_the_adapter_trusts_only_the_organizations_verified_domains(cast: Any, acme_sso: Any, rf: Any) -> None:
    from allauth.core.exceptions import ImmediateHttpResponse

    adapter = SocialAccountAdapter()
    provider = acme_sso.social_app.get_provider(None)
    assert adapter.is_email_verified(provider, "dana@acme.test")
    assert not adapter.is_email_verified(provider, "dana@globex.test")
    inside, outside = _login_for(acme_sso.social_app, "dana@acme.test"), _login_for(acme_sso.social_app, "x@evil.test")
    request = rf.get("/")
    assert adapter.is_open_for_signup(request, inside)
    assert not adapter.is_open_for_signup(request, outside)
    adapter.pre_social_login(request, inside)
    with pytest.raises(ImmediateHttpResponse) as refused:
        adapter.pre_social_login(request, outside)
    assert refused.value.response.status_code == 403
    assert b"x@evil.test is not one of them" in refused.value.response.content


# --- admitting mapped groups only: the identity provider refusing a person ---------------------------


def _mapped_groups_only(cast: Any) -> None:
    sso_roles_set(
        principal=cast.principal(cast.alice),
        default_role="member",
        role_claim="groups",
        role_map="eng = member",
        groups_required=True,
    )


def _sign_in_as(app: Any, user: Any, groups: list[str]) -> SocialLogin:
    login = _login_for(app, user.email)
    login.user = user
    login.account.extra_data = {"userinfo": {"groups": groups}}
    return login


def test_a_member_the_provider_lists_in_no_mapped_group_is_refused_and_deactivated_with_their_tokens(
    cast: Any, acme_sso: Any, rf: Any
) -> None:
    from allauth.core.exceptions import ImmediateHttpResponse

    from accounts.models import ApiToken
    from accounts.services import token_create

    _mapped_groups_only(cast)
    token, _ = token_create(organization=cast.org_a, label="bob's laptop", created_by=cast.bob)

    with pytest.raises(ImmediateHttpResponse) as refused:
        SocialAccountAdapter().pre_social_login(rf.get("/"), _sign_in_as(acme_sso.social_app, cast.bob, ["sales"]))

    assert refused.value.response.status_code == 403
    assert b"lists you in none of them" in refused.value.response.content
    membership = Membership.objects.get(organization=cast.org_a, user=cast.bob)
    assert not membership.is_active
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    event = AuditEvent.objects.get(verb="member.deactivate")
    assert (event.actor, event.actor_user_id) == ("system", None)  # the identity provider, not a person
    assert event.data["reason"] == "the identity provider lists them in no mapped group"
    assert event.data["api_tokens_revoked"] == 1


def test_a_person_in_a_mapped_group_is_admitted_and_a_newcomer_in_none_never_joins(
    cast: Any, acme_sso: Any, rf: Any
) -> None:
    from allauth.core.exceptions import ImmediateHttpResponse

    _mapped_groups_only(cast)
    adapter = SocialAccountAdapter()
    adapter.pre_social_login(rf.get("/"), _sign_in_as(acme_sso.social_app, cast.bob, ["eng"]))
    assert Membership.objects.get(organization=cast.org_a, user=cast.bob).is_active

    newcomer = _login_for(acme_sso.social_app, "frank@acme.test")  # no account yet
    newcomer.account.extra_data = {"userinfo": {"groups": []}}
    with pytest.raises(ImmediateHttpResponse):
        adapter.pre_social_login(rf.get("/"), newcomer)
    assert not Membership.objects.filter(user__email="frank@acme.test").exists()
    assert not AuditEvent.objects.filter(verb="member.deactivate").exists()


def test_an_owner_in_no_mapped_group_is_refused_but_keeps_the_membership(cast: Any, acme_sso: Any, rf: Any) -> None:
    from allauth.core.exceptions import ImmediateHttpResponse

    _mapped_groups_only(cast)
    with pytest.raises(ImmediateHttpResponse):
        SocialAccountAdapter().pre_social_login(rf.get("/"), _sign_in_as(acme_sso.social_app, cast.alice, []))
    assert Membership.objects.get(organization=cast.org_a, user=cast.alice).is_active


def test_without_the_policy_a_person_in_no_mapped_group_joins_with_the_default_role(
    cast: Any, acme_sso: Any, rf: Any
) -> None:
    sso_roles_set(
        principal=cast.principal(cast.alice), default_role="viewer", role_claim="groups", role_map="eng = member"
    )
    SocialAccountAdapter().pre_social_login(rf.get("/"), _sign_in_as(acme_sso.social_app, cast.bob, ["sales"]))
    assert Membership.objects.get(organization=cast.org_a, user=cast.bob).is_active


def test_admitting_mapped_groups_only_needs_a_mapped_group(cast: Any, acme_sso: Any) -> None:
    from reasoningbank.errors import InvalidInput

    with pytest.raises(InvalidInput, match="map at least one group"):
        sso_roles_set(
            principal=cast.principal(cast.alice), default_role="member", role_claim="groups", role_map="",
            groups_required=True,
        )  # fmt: skip
    acme_sso.refresh_from_db()
    assert not acme_sso.groups_required
