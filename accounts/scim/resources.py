"""Our rows as SCIM resources and back (RFC 7643), and the discovery documents (RFC 7644 section 4).

* A SCIM **User** is a membership of the organization: ``id`` is the membership's id, ``userName`` the
  person's e-mail address, ``active`` whether the membership is active, ``externalId`` the identity
  provider's id. A deactivated member stays listed with ``active: false``.
* A SCIM **Group** is a team: ``displayName`` its name, ``members`` its members' User ids.
"""

from __future__ import annotations

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Email,
    ETag,
    Filter,
    Group,
    GroupMember,
    Meta,
    Name,
    Patch,
    ResourceType,
    Schema,
    ServiceProviderConfig,
    Sort,
    User,
)

from accounts.models import Membership, Team

# a page of a listing: what an IdP asks for without ``count``, and the most we return at once
PAGE_DEFAULT = 100
PAGE_MAX = 200


def user_resource(membership: Membership, *, base_url: str) -> User:
    user = membership.user
    given, family = user.first_name or None, user.last_name or None
    display = " ".join(part for part in (user.first_name, user.last_name) if part) or user.email
    return User(
        id=str(membership.pk),
        external_id=membership.scim_external_id or None,
        user_name=user.email,
        name=Name(given_name=given, family_name=family) if given or family else None,
        display_name=display,
        active=membership.is_active,
        # built without validation: the address is the account's, already accepted at sign-up, and an
        # address pydantic's checker refuses (a reserved domain, a local host) must not hide the member
        emails=[Email.model_construct(value=user.email, primary=True, type=Email.Type.work)] if user.email else None,
        meta=Meta(
            resource_type="User",
            created=membership.created_at,
            last_modified=membership.updated_at,
            location=f"{base_url}/Users/{membership.pk}",
        ),
    )


def group_resource(team: Team, members: list[Membership], *, base_url: str) -> Group:
    return Group(
        id=str(team.pk),
        display_name=team.name,
        members=[
            GroupMember(value=str(m.pk), display=m.user.email, ref=f"{base_url}/Users/{m.pk}", type="User")  # type: ignore[arg-type]
            for m in members
        ],
        meta=Meta(
            resource_type="Group",
            created=team.created_at,
            last_modified=team.created_at,
            location=f"{base_url}/Groups/{team.pk}",
        ),
    )


def service_provider_config(*, base_url: str) -> ServiceProviderConfig:
    return ServiceProviderConfig(
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=PAGE_MAX),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="SCIM token",
                description="A bearer token made on Settings → Provisioning (SCIM) of the organization",
                primary=True,
            )
        ],
        meta=Meta(resource_type="ServiceProviderConfig", location=f"{base_url}/ServiceProviderConfig"),
    )


RESOURCE_MODELS: tuple[type[User] | type[Group], ...] = (User, Group)


def resource_types(*, base_url: str) -> list[ResourceType]:
    types = []
    for model in RESOURCE_MODELS:
        resource_type = ResourceType.from_resource(model)
        resource_type.meta = Meta(resource_type="ResourceType", location=f"{base_url}/ResourceTypes/{resource_type.id}")
        types.append(resource_type)
    return types


def schemas(*, base_url: str) -> list[Schema]:
    found = []
    for model in RESOURCE_MODELS:
        schema = model.to_schema()
        schema.meta = Meta(resource_type="Schema", location=f"{base_url}/Schemas/{schema.id}")
        found.append(schema)
    return found
