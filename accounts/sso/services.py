"""Writes of single sign-on: an organization's identity provider (one allauth SocialApp, OpenID Connect or
SAML 2.0), its roles, its domains and their proof, the require-SSO policy, and what a sign-in through the
provider does (just-in-time membership, the roles its groups give). Every change is audited."""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlsplit

from allauth.socialaccount.models import SocialApp
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.access import Principal, access_get, principal_for_membership
from accounts.audit import audit_record
from accounts.departures.services import member_deactivate
from accounts.models import Membership, Organization, SsoConnection, SsoDomain
from accounts.organizations.services import membership_set_role
from accounts.sso import dns
from accounts.sso.outbound import metadata_fetch
from accounts.sso.rules import (
    claim_values,
    domain_normalise,
    role_for_groups,
    role_map_parse,
    verification_found,
    verification_record_name,
)
from accounts.sso.selectors import sso_connection_for_app, sso_connection_of_org
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded

OIDC_PROVIDER = "openid_connect"
SAML_PROVIDER = "saml"


def sso_provider_id(organization: Organization) -> str:
    """The SocialApp's provider_id: in the sign-in URLs (/accounts/oidc/<provider_id>/…) and in every
    SocialAccount the provider signs in."""
    return f"org-{organization.slug}"


def _url_check(value: str, *, field: str, what: str) -> str:
    url = value.strip()
    parts = urlsplit(url)
    schemes = ("https", "http") if settings.SSO_ALLOW_HTTP else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise InvalidInput(f"enter the {what} as an https:// address", field=field)
    return url


def _social_app_replace(connection: SsoConnection | None, *, provider: str) -> SocialApp:
    """The connection's SocialApp when it is of ``provider``; else a new one (the old one goes with its
    connection row: a switch of protocol starts afresh)."""
    if connection is not None and connection.social_app.provider == provider:
        return connection.social_app
    if connection is not None:
        old_app = connection.social_app
        connection.delete()
        old_app.delete()
    return SocialApp(provider=provider)


def _connection_save(
    *, principal: Principal, app: SocialApp, protocol: str, audit_data: dict[str, Any]
) -> SsoConnection:
    organization = principal.organization
    app.name = organization.name
    app.provider_id = sso_provider_id(organization)
    app.save()
    connection, created = SsoConnection.objects.get_or_create(
        organization=organization, defaults={"social_app": app, "protocol": protocol}
    )
    if not created:
        connection.updated_at = timezone.now()
        connection.save(update_fields=["updated_at"])
    audit_record(
        organization=organization,
        actor=principal,
        verb="sso.configure",
        target=connection,
        data={"protocol": protocol, **audit_data},
    )
    return connection


@transaction.atomic
def sso_oidc_configure(*, principal: Principal, server_url: str, client_id: str, secret: str) -> SsoConnection:
    """An OpenID Connect provider: its issuer (or server) URL, and the client id and secret the
    organization registered there. A blank secret keeps the one stored."""
    server_url = _url_check(server_url, field="server_url", what="issuer URL")
    client_id = client_id.strip()
    if not client_id or len(client_id) > 191:
        raise InvalidInput("enter the client id your identity provider gave this application", field="client_id")
    existing = sso_connection_of_org(tenant=principal)
    app = _social_app_replace(existing, provider=OIDC_PROVIDER)
    secret = secret.strip()
    if not secret and not app.secret:
        raise InvalidInput("enter the client secret your identity provider gave this application", field="secret")
    app.client_id = client_id
    if secret:
        app.secret = secret
    # PKCE on every sign-in; the provider's discovery document gives the rest (endpoints, keys)
    app.settings = {"server_url": server_url, "oauth_pkce_enabled": True}
    return _connection_save(
        principal=principal,
        app=app,
        protocol=SsoConnection.PROTOCOL_OIDC,
        audit_data={"server_url": server_url, "client_id": client_id, "secret_changed": bool(secret)},
    )


def _saml_idp_from_metadata(xml: str, entity_id: str) -> dict[str, Any]:
    from onelogin.saml2.idp_metadata_parser import OneLogin_Saml2_IdPMetadataParser

    try:
        parsed = OneLogin_Saml2_IdPMetadataParser.parse(xml.encode(), entity_id=entity_id or None)
    except Exception:  # the parser raises bare Exceptions and lxml's errors alike
        raise InvalidInput("the metadata is not SAML 2.0 IdP metadata XML", field="metadata_xml") from None
    idp = parsed.get("idp") or {}
    certificate = idp.get("x509cert") or next(iter((idp.get("x509certMulti") or {}).get("signing", [])), "")
    sso_url = (idp.get("singleSignOnService") or {}).get("url", "")
    if not idp.get("entityId") or not certificate or not sso_url:
        raise InvalidInput(
            "the metadata names no IdP entity id, signing certificate and sign-on URL", field="metadata_xml"
        )
    return {"entity_id": idp["entityId"], "x509cert": certificate, "sso_url": sso_url}


@transaction.atomic
def sso_saml_configure(
    *,
    principal: Principal,
    metadata_url: str = "",
    metadata_xml: str = "",
    entity_id: str = "",
    sso_url: str = "",
    x509cert: str = "",
) -> SsoConnection:
    """A SAML 2.0 identity provider, by its metadata URL (read again at sign-in, so a new certificate is
    picked up), by its metadata XML, or by its entity id, sign-on URL and signing certificate."""
    entity_id = entity_id.strip()
    if metadata_url.strip():
        metadata_url = _url_check(metadata_url, field="metadata_url", what="metadata URL")
        if not entity_id:
            raise InvalidInput("enter the IdP's entity id (its metadata may describe several)", field="entity_id")
        # read now, through the address guard, and kept: nothing is fetched at sign-in (save again after the
        # IdP changes its certificate)
        idp: dict[str, Any] = _saml_idp_from_metadata(metadata_fetch(metadata_url), entity_id)
        source = "metadata_url"
    elif metadata_xml.strip():
        idp = _saml_idp_from_metadata(metadata_xml.strip(), entity_id)
        source = "metadata_xml"
    else:
        if not entity_id:
            raise InvalidInput("enter the IdP's metadata URL, its metadata XML, or its entity id", field="entity_id")
        certificate = "".join(line for line in x509cert.strip().splitlines() if "CERTIFICATE" not in line)
        if not certificate:
            raise InvalidInput("enter the IdP's signing certificate (PEM)", field="x509cert")
        idp = {
            "entity_id": entity_id,
            "x509cert": certificate,
            "sso_url": _url_check(sso_url, field="sso_url", what="sign-on URL"),
        }
        source = "fields"
    existing = sso_connection_of_org(tenant=principal)
    app = _social_app_replace(existing, provider=SAML_PROVIDER)
    # allauth's saml URLs carry the client_id (/accounts/saml/<client_id>/acs/): the organization's slug
    app.client_id = principal.organization.slug
    app.settings = {
        "idp": idp,
        "rb_metadata_url": metadata_url.strip() if source == "metadata_url" else "",
        # the person is the assertion's NameID; the address comes from the usual attributes or the NameID
        "attribute_mapping": {
            "email": [
                "urn:oid:0.9.2342.19200300.100.1.3",
                "email",
                "mail",
                "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
            ],
            "first_name": ["urn:oid:2.5.4.42", "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname"],
            "last_name": ["urn:oid:2.5.4.4", "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname"],
        },
        "use_nameid_for_email": False,
        # a signed assertion, always: an unsigned one would let anyone post any name to the ACS
        "advanced": {"strict": True, "want_assertion_signed": True, "reject_deprecated_algorithm": True},
    }
    return _connection_save(
        principal=principal,
        app=app,
        protocol=SsoConnection.PROTOCOL_SAML,
        audit_data={"source": source, "entity_id": idp["entity_id"]},
    )


@transaction.atomic
def sso_roles_set(
    *, principal: Principal, default_role: str, role_claim: str, role_map: str, groups_required: bool = False
) -> SsoConnection:
    """The role of a person who joins on first sign-in, the claim (attribute) that lists their groups, the
    table from group to role (``group = role`` a line), and whether only people in a mapped group may sign
    in (``sso_sign_in_admit``)."""
    connection = sso_connection_of_org(tenant=principal)
    if connection is None:
        raise InvalidInput("configure the identity provider first", field="form")
    if default_role not in SsoConnection.JIT_ROLES:
        raise InvalidInput("the default role must be viewer, member or admin", field="default_role")
    try:
        mapping = role_map_parse(role_map)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="role_map") from None
    if groups_required and not mapping:
        raise InvalidInput("map at least one group before admitting mapped groups only", field="role_map")
    connection.default_role = default_role
    connection.role_claim = role_claim.strip()[:300]
    connection.role_map = mapping
    connection.groups_required = groups_required
    connection.updated_at = timezone.now()
    connection.save(update_fields=["default_role", "role_claim", "role_map", "groups_required", "updated_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="sso.configure",
        target=connection,
        data={
            "default_role": default_role,
            "role_claim": connection.role_claim,
            "role_map": mapping,
            "groups_required": groups_required,
        },
    )
    return connection


# --- domains ---------------------------------------------------------------------------------------


@transaction.atomic
def sso_domain_add(*, principal: Principal, domain: str) -> SsoDomain:
    """A domain to prove: its TXT record's value is shown to the admin until it is verified."""
    try:
        name = domain_normalise(domain)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="domain") from None
    if SsoDomain.objects.filter(organization=principal.organization, domain=name).exists():
        raise Conflict(f"{name} is already on the list", field="domain")
    row = SsoDomain.objects.create(organization=principal.organization, domain=name, token=secrets.token_urlsafe(24))
    audit_record(
        organization=principal.organization, actor=principal, verb="sso.domain_add", target=row, data={"domain": name}
    )
    return row


@transaction.atomic
def sso_domain_verify(*, principal: Principal, domain_id: Any) -> SsoDomain:
    """Looks the domain's TXT record up; found, the domain is the organization's (unless another one
    proved it first)."""
    row = access_get(SsoDomain.objects.select_for_update(), principal, pk=domain_id)
    if row.verified_at is not None:
        return row
    record = verification_record_name(row.domain)
    if not verification_found(dns.txt_records(record), row.token):
        raise InvalidInput(
            f"no TXT record {record} with this organization's value was found; DNS changes can "
            "take a while to show, try again later",
            field="domain",
        )
    row.verified_at = timezone.now()
    try:
        with transaction.atomic():
            row.save(update_fields=["verified_at"])
    except IntegrityError:
        raise Conflict(f"another organization has verified {row.domain}", field="domain") from None
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="sso.domain_verify",
        target=row,
        data={"domain": row.domain, "record": record},
    )
    return row


@transaction.atomic
def sso_domain_remove(*, principal: Principal, domain_id: Any) -> None:
    row = access_get(SsoDomain, principal, pk=domain_id)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="sso.domain_remove",
        target=row,
        data={"domain": row.domain, "was_verified": row.verified_at is not None},
    )
    row.delete()


# --- policy ----------------------------------------------------------------------------------------


@transaction.atomic
def sso_policy_set(*, principal: Principal, required: bool) -> Organization:
    """Require SSO for the organization's verified domains (owners only: it changes how everyone signs in)."""
    if principal.role != Membership.ROLE_OWNER:
        raise Forbidden("only an owner may change the sign-in policy", field="sso_required")
    organization = Organization.objects.select_for_update().get(pk=principal.organization.pk)
    if required:
        if sso_connection_of_org(tenant=organization) is None:
            raise InvalidInput("configure the identity provider before requiring it", field="sso_required")
        if not organization.sso_domains.filter(verified_at__isnull=False).exists():
            raise InvalidInput("verify at least one domain before requiring SSO", field="sso_required")
    if organization.sso_required != required:
        organization.sso_required = required
        organization.save(update_fields=["sso_required"])
        audit_record(
            organization=organization, actor=principal, verb="sso.policy_change", data={"sso_required": required}
        )
    principal.organization.sso_required = required
    return organization


# --- sign-in ---------------------------------------------------------------------------------------

IDP_REFUSED_REASON = "the identity provider lists them in no mapped group"


@transaction.atomic
def sso_sign_in_admit(*, user: Any, social_app_id: int, claims: dict[str, Any]) -> str | None:
    """Before a sign-in through an organization's provider: None when it is admitted, else why not (the
    refusal page shows it). An organization that admits its mapped groups only refuses a person whose groups
    map to no role: the identity provider no longer vouches for them, so a member refused so is deactivated
    in the same step as by SCIM or an admin (tokens, connected apps and sessions end; accounts/departures) —
    except an owner, who keeps the break-glass password (ownership is handed over by a person)."""
    connection = sso_connection_for_app(social_app_id=social_app_id)
    if connection is None or not connection.groups_required:
        return None
    if role_for_groups(claim_values(claims, connection.role_claim), connection.role_map) is not None:
        return None
    organization = connection.organization
    membership = (
        Membership.objects.filter(organization=organization, user=user).first()
        if user is not None and user.pk
        else None
    )
    if membership is not None and membership.is_active and membership.role != Membership.ROLE_OWNER:
        member_deactivate(organization=organization, user=user, actor=None, reason=IDP_REFUSED_REASON)
    return (
        f"{organization.name} admits the members of its mapped groups only, "
        "and its identity provider lists you in none of them."
    )


@transaction.atomic
def sso_sign_in_complete(*, user: Any, social_app_id: int, claims: dict[str, Any]) -> Membership | None:
    """After a sign-in through an organization's provider: the person joins the organization on their first
    sign-in (the role their groups map to, or the default role), a mapped group changes a member's role
    (never an owner's), and a joiner's first sign-in is audited. None when the app is no organization's."""
    connection = sso_connection_for_app(social_app_id=social_app_id)
    if connection is None:
        return None
    organization = connection.organization
    groups = claim_values(claims, connection.role_claim)
    mapped = role_for_groups(groups, connection.role_map)
    membership = Membership.objects.select_for_update().filter(organization=organization, user=user).first()
    joined = membership is None
    if membership is None:
        limit = organization.limit("members")
        active = Membership.objects.filter(organization=organization, deactivated_at__isnull=True)
        if limit is not None and active.count() >= limit:
            raise LimitExceeded(f"{organization.name} has reached its plan's {limit} members; ask an owner")
        role = mapped or connection.default_role
        membership = Membership.objects.create(organization=organization, user=user, role=role)
        audit_record(
            organization=organization,
            actor=principal_for_membership(membership),
            verb="member.jit_join",
            target=membership,
            data={"user": user.email, "role": role, "groups": groups[:50]},
        )
    elif mapped and membership.role != Membership.ROLE_OWNER and membership.role != mapped:
        membership_set_role(membership=membership, role=mapped, actor=None)
    if joined:
        # a member's sign-in is the audit log's own row (accounts/receivers.py, method "sso"), written when
        # Django signs the person in — before this runs, so before a first-time joiner belonged here
        audit_record(
            organization=organization,
            actor=principal_for_membership(membership),
            verb="auth.sign_in",
            data={"method": "sso", "protocol": connection.protocol},
        )
    return membership
