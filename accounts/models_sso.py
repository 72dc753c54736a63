"""Single sign-on's rows (accounts/sso/, docs/identity.md#single-sign-on): an organization's identity
provider (one allauth ``SocialApp`` each, OpenID Connect or SAML 2.0, with how its group claim maps to
roles) and the e-mail domains the organization proved it owns."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Organization


class SsoConnection(models.Model):
    PROTOCOL_OIDC = "oidc"
    PROTOCOL_SAML = "saml"
    PROTOCOL_CHOICES = [(PROTOCOL_OIDC, "OpenID Connect"), (PROTOCOL_SAML, "SAML 2.0")]
    # roles a sign-in may give: never owner (ownership is handed over by a person, not by a group claim)
    JIT_ROLES = ("admin", "member", "viewer")

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="sso_connection")
    # allauth's row: provider openid_connect or saml, provider_id derived from the organization's slug
    social_app = models.OneToOneField("socialaccount.SocialApp", on_delete=models.PROTECT, related_name="+")
    protocol = models.CharField(max_length=8, choices=PROTOCOL_CHOICES)
    # the role of a person who joins on first sign-in when no group of theirs is mapped
    default_role = models.CharField(
        max_length=10, choices=[("admin", "Admin"), ("member", "Member"), ("viewer", "Viewer")], default="member"
    )
    # the claim (OIDC) or attribute (SAML) that lists a person's groups, and {group: role}
    role_claim = models.CharField(max_length=300, blank=True, default="groups")
    role_map = models.JSONField(default=dict, blank=True)
    # only people in a mapped group may sign in: a sign-in whose groups map to no role is the identity
    # provider refusing that person, and a member refused so is deactivated (docs/identity.md)
    groups_required = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.organization_id}:{self.protocol}"


class SsoDomain(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sso_domains")
    domain = models.CharField(max_length=253)
    # the value the organization publishes in a TXT record to prove it owns the domain
    token = models.CharField(max_length=64)
    verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["domain"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "domain"], name="sso_domain_unique_in_org"),
            # a domain belongs to one organization: the first to prove it owns it
            models.UniqueConstraint(
                fields=["domain"], condition=models.Q(verified_at__isnull=False), name="sso_domain_verified_once"
            ),
        ]

    def __str__(self) -> str:
        return self.domain
