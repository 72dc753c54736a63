"""Tenancy: organizations, teams, projects, memberships, API tokens and the audit log."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from accounts.plans.catalogue import PLAN_CHOICES, PLAN_FREE, plan_get
from reasoningbank.sharding import SameOrganization

SCOPE_MEMORIES_READ = "memories:read"
SCOPE_MEMORIES_WRITE = "memories:write"
SCOPE_CONSOLIDATION_RUN = "consolidation:run"
SCOPE_ADMIN = "admin"
TOKEN_SCOPES = (SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN, SCOPE_ADMIN)
# the first characters of a token kept for display (``ApiToken.prefix``): "rb_" + 7 characters; the failed-token
# limits count by them too (accounts/throttling.py)
TOKEN_DISPLAY_CHARS = 10
DEFAULT_TOKEN_SCOPES = (SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN)
# what each scope lets a token do, in the words of the token form and the OAuth consent page alike
SCOPE_HELP = {
    SCOPE_MEMORIES_READ: "search and read memories",
    SCOPE_MEMORIES_WRITE: "record memories, feedback, outcomes and sessions",
    SCOPE_CONSOLIDATION_RUN: "request consolidation runs",
    SCOPE_ADMIN: "administer the organization",
}


class Organization(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    plan = models.CharField(max_length=20, choices=PLAN_CHOICES, default=PLAN_FREE)
    # A lesson that holds in several projects (teams) is proposed for team (org) scope and waits in the
    # review queue; on, proposals are accepted at once, audited as automatic
    # (docs/consolidation.md#institutional-promotion).
    auto_promote_institutional = models.BooleanField(
        default=False,
        help_text="accept institutional promotion proposals at once instead of waiting in the review queue",
    )
    # memory poisoning (docs/security/memory-poisoning.md): what the instruction-smell detector does with
    # a memory it flags, and what the hooks and memory_context inject automatically
    POISONING_OFF, POISONING_FLAG, POISONING_QUARANTINE = "off", "flag", "quarantine"
    POISONING_CHOICES = [
        (POISONING_OFF, "Off — store flagged memories as they are"),
        (POISONING_FLAG, "Flag — store them active, with a visible flag"),
        (POISONING_QUARANTINE, "Quarantine — hold them for an admin's review"),
    ]
    poisoning_policy = models.CharField(max_length=12, choices=POISONING_CHOICES, default=POISONING_QUARANTINE)
    INJECTION_TRUSTED, INJECTION_REVIEWED, INJECTION_ALL = "trusted", "reviewed", "all"
    INJECTION_CHOICES = [
        (INJECTION_TRUSTED, "Trusted — written by a member or above, or reviewed by a person"),
        (INJECTION_REVIEWED, "Reviewed — only memories a person reviewed"),
        (INJECTION_ALL, "All — every active memory"),
    ]
    injection_policy = models.CharField(max_length=12, choices=INJECTION_CHOICES, default=INJECTION_TRUSTED)
    # hosts whose install scripts may be piped into a shell in a memory without a flag, beyond the
    # detector's built-in list of well-known installers
    trusted_hosts = ArrayField(models.CharField(max_length=253), default=list, blank=True)
    # OAuth clients (client_id) an admin trusts: what their agents write is injected without a review
    trusted_oauth_clients = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # every member must sign in with a second factor: without one they are sent to enrolment and cannot
    # use the dashboard, and their agents cannot be connected (docs/identity.md#multi-factor-authentication)
    mfa_required = models.BooleanField(
        default=False, help_text="members must enrol a second factor (authenticator app or passkey) to sign in"
    )
    # single sign-on (accounts/sso/, docs/identity.md#single-sign-on): on, addresses of the organization's
    # verified domains sign in through its identity provider only (its owners keep a break-glass password)
    sso_required = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def has_feature(self, feature: str) -> bool:
        return feature in plan_get(self.plan).features

    def limit(self, name: str) -> int | None:
        """The plan's limit called ``name``; None means unlimited."""
        return plan_get(self.plan).limits.get(name)


class Team(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="teams")
    slug = models.SlugField(max_length=50)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "slug"], name="team_slug_unique_in_org"),
            # target of the composite foreign keys that keep projects/memories inside the org
            models.UniqueConstraint(fields=["id", "organization"], name="team_id_org_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.organization_id}/{self.slug}"


class Project(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="projects")
    # the database checks it with project_team_same_org (reasoningbank/sharding.py)
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="projects", db_constraint=False
    )
    slug = models.SlugField(max_length=50)
    name = models.CharField(max_length=200)
    # the normalised git remote this project's code lives in (docs/code-memory.md#projects-by-repository):
    # agents in any clone of it, on any machine, resolve to this project
    repository = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "slug"], name="project_slug_unique_in_org"),
            models.UniqueConstraint(
                fields=["organization", "repository"],
                condition=~models.Q(repository=""),
                name="project_repository_unique_in_org",
            ),
            models.UniqueConstraint(fields=["id", "organization"], name="project_id_org_unique"),
            SameOrganization(field="team", name="project_team_same_org"),
        ]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    ROLE_OWNER = "owner"
    ROLE_ADMIN = "admin"
    ROLE_MEMBER = "member"
    ROLE_VIEWER = "viewer"
    ROLE_CHOICES = [
        (ROLE_OWNER, "Owner"),
        (ROLE_ADMIN, "Admin"),
        (ROLE_MEMBER, "Member"),
        (ROLE_VIEWER, "Viewer"),
    ]
    # higher rank = more rights; role checks compare ranks
    ROLE_RANK = {ROLE_VIEWER: 0, ROLE_MEMBER: 1, ROLE_ADMIN: 2, ROLE_OWNER: 3}

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default=ROLE_MEMBER)
    created_at = models.DateTimeField(default=timezone.now)
    # a departure (accounts/departures/services.py): set, the person can no longer act in this org — the
    # dashboard refuses the org, their tokens and apps here are revoked — but the row, and with it the
    # attribution of everything they wrote, stays (docs/identity.md#provisioning-and-departure)
    deactivated_at = models.DateTimeField(null=True, blank=True)
    deactivated_reason = models.CharField(max_length=300, blank=True, default="")
    # the identity provider's own id for this person, as SCIM sent it (``externalId``)
    scim_external_id = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["organization__slug"]
        constraints = [
            models.UniqueConstraint(fields=["user", "organization"], name="membership_unique"),
            # the target of TeamMember's composite foreign key
            models.UniqueConstraint(fields=["id", "organization"], name="membership_id_org_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.organization_id}:{self.role}"

    @property
    def is_active(self) -> bool:
        return self.deactivated_at is None

    def has_role(self, minimum: str) -> bool:
        return self.ROLE_RANK[self.role] >= self.ROLE_RANK[minimum]


class ApiToken(models.Model):
    """An org API token. The raw value is shown once; only its SHA-256 digest is stored."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_tokens")
    label = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="First characters of the token, for display")
    # unique with the organization (apitoken_digest_unique): the index a token's lookup uses
    digest = models.CharField(max_length=64)
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    # the restriction's rows repeat the org so PostgreSQL keeps them inside it (ApiTokenProject)
    projects: models.ManyToManyField[Project, ApiTokenProject] = models.ManyToManyField(
        Project, blank=True, related_name="api_tokens", through="ApiTokenProject"
    )
    teams: models.ManyToManyField[Team, ApiTokenTeam] = models.ManyToManyField(
        Team, blank=True, related_name="api_tokens", through="ApiTokenTeam"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # a burst of flagged writes suspends the token's write rights until an admin lifts it; reads go on
    # (docs/security/memory-poisoning.md)
    write_suspended_at = models.DateTimeField(null=True, blank=True)
    write_suspended_reason = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # digest first: a token is looked up by its digest alone, before its organization is known. A
            # SHA-256 of 32 random bytes does not collide, so unique within the org is unique everywhere.
            models.UniqueConstraint(fields=["digest", "organization"], name="apitoken_digest_unique"),
            models.UniqueConstraint(fields=["id", "organization"], name="apitoken_id_org_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.label})"

    def is_active(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class ApiTokenProject(models.Model):
    """A project a token is restricted to. ``organization`` is the token's, and composite foreign keys
    make PostgreSQL refuse a row whose token or project is of another org (reasoningbank/sharding.py).
    Write with ``through_defaults={"organization": ...}``."""

    token = models.ForeignKey(
        ApiToken, on_delete=models.CASCADE, db_column="apitoken_id", related_name="+", db_constraint=False
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "accounts_apitoken_projects"  # the table the plain many-to-many had
        unique_together = [("token", "project", "organization")]
        constraints = [
            SameOrganization(field="token", name="apitoken_project_token_same_org"),
            SameOrganization(field="project", name="apitoken_project_same_org"),
        ]

    def __str__(self) -> str:
        return f"token {self.token_id} → project {self.project_id}"


class ApiTokenTeam(models.Model):
    """A team a token is restricted to; kept inside the org as ``ApiTokenProject``."""

    token = models.ForeignKey(
        ApiToken, on_delete=models.CASCADE, db_column="apitoken_id", related_name="+", db_constraint=False
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "accounts_apitoken_teams"
        unique_together = [("token", "team", "organization")]
        constraints = [
            SameOrganization(field="token", name="apitoken_team_token_same_org"),
            SameOrganization(field="team", name="apitoken_team_same_org"),
        ]

    def __str__(self) -> str:
        return f"token {self.token_id} → team {self.team_id}"


class AuditEvent(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.CharField(max_length=200, help_text="who acted: user email, token prefix or 'system'")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False
    )
    verb = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    # where the request came from (docs/identity.md#the-audit-log): the client's address and the client that
    # named itself (MCP clientInfo, else the User-Agent); both empty for the system's own work (tasks, commands)
    ip = models.GenericIPAddressField(null=True, blank=True, unpack_ipv4=True)
    client = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="audit_org_time"),
            # the log's filters: one verb (or its category, a prefix) over time
            models.Index(fields=["organization", "verb", "-created_at"], name="audit_org_verb_time"),
            models.Index(fields=["organization", "target_type", "target_id"], name="audit_org_target"),
        ]
        constraints = [SameOrganization(field="actor_token", name="audit_actor_token_same_org")]

    def __str__(self) -> str:
        return f"{self.verb} {self.target_type}:{self.target_id} by {self.actor}"


class ThrottleCounter(models.Model):
    """Failed-authentication counters every web worker process shares (``accounts/throttling.py``
    hits them with atomic upserts), and the write limits' counters (``accounts/write_limits/services.py``).
    Not tenant data: keys are client addresses, hashed logins, hashed token prefixes, and the ids of
    tokens, connected apps, members and organizations."""

    key = models.CharField(max_length=200, primary_key=True)
    count = models.IntegerField()
    window_ends_at = models.DateTimeField(db_index=True)
    blocked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "rb_throttle"

    def __str__(self) -> str:
        return self.key


class SharedCacheEntry(models.Model):
    """A row of the ``shared`` Django cache (a ``DatabaseCache``; ``reasoningbank/cache.py``), where
    allauth keeps its rate limits. A model only so that a migration creates the table (the columns
    ``manage.py createcachetable`` would make) and test databases empty it; never used directly."""

    cache_key = models.CharField(max_length=255, primary_key=True)
    value = models.TextField()
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "rb_cache"

    def __str__(self) -> str:
        return self.cache_key


class OAuthConnection(models.Model):
    """A connected app: what a user allowed an OAuth client to do inside one org
    (docs/oauth.md#connected-apps-and-revocation).

    Made on the consent page; django-oauth-toolkit's grants and tokens point here through
    ``OAuthGrantLink`` / ``OAuthTokenLink``. A token's rights are this row's org, scopes (never above
    the user's current role) and project/team restriction; revoking the row ends all its tokens.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="oauth_connections")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_connections")
    application = models.ForeignKey(
        "oauth2_provider.Application", on_delete=models.CASCADE, related_name="rb_connections"
    )
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    # the restriction's rows repeat the org so PostgreSQL keeps them inside it (OAuthConnectionProject)
    projects: models.ManyToManyField[Project, OAuthConnectionProject] = models.ManyToManyField(
        Project, blank=True, related_name="oauth_connections", through="OAuthConnectionProject"
    )
    teams: models.ManyToManyField[Team, OAuthConnectionTeam] = models.ManyToManyField(
        Team, blank=True, related_name="oauth_connections", through="OAuthConnectionTeam"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # as ApiToken's: a burst of flagged writes suspends the app's write rights in this org
    write_suspended_at = models.DateTimeField(null=True, blank=True)
    write_suspended_reason = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # one live connection per user, client and org: consenting again updates it
            models.UniqueConstraint(
                fields=["user", "application", "organization"],
                condition=models.Q(revoked_at__isnull=True),
                name="oauth_connection_live_unique",
            ),
            # the target of the restriction rows' composite foreign keys (migration 0005)
            models.UniqueConstraint(fields=["id", "organization"], name="oauth_connection_id_org_unique"),
        ]

    def __str__(self) -> str:
        return f"connection {self.pk} ({self.application_id} in {self.organization_id})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class OAuthConnectionProject(models.Model):
    """A project a connected app is restricted to. ``organization`` is the connection's, and two
    composite foreign keys (migration 0005, as ``memories/0002``) make PostgreSQL refuse a row whose
    connection or project is of another org: no code path, however careless, can let an app of one
    org reach another org's project. Write with ``through_defaults={"organization": ...}``."""

    connection = models.ForeignKey(
        OAuthConnection,
        on_delete=models.CASCADE,
        db_column="oauthconnection_id",
        related_name="+",
        db_constraint=False,
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "accounts_oauthconnection_projects"  # the table the plain many-to-many had
        unique_together = [("connection", "project", "organization")]
        constraints = [
            SameOrganization(field="connection", name="oauth_connection_project_connection_same_org"),
            SameOrganization(field="project", name="oauth_connection_project_same_org"),
        ]

    def __str__(self) -> str:
        return f"connection {self.connection_id} → project {self.project_id}"


class OAuthConnectionTeam(models.Model):
    """A team a connected app is restricted to; kept inside the org as ``OAuthConnectionProject``."""

    connection = models.ForeignKey(
        OAuthConnection,
        on_delete=models.CASCADE,
        db_column="oauthconnection_id",
        related_name="+",
        db_constraint=False,
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "accounts_oauthconnection_teams"
        unique_together = [("connection", "team", "organization")]
        constraints = [
            SameOrganization(field="connection", name="oauth_connection_team_connection_same_org"),
            SameOrganization(field="team", name="oauth_connection_team_same_org"),
        ]

    def __str__(self) -> str:
        return f"connection {self.connection_id} → team {self.team_id}"


class OAuthGrantLink(models.Model):
    """Which connection an authorization code was issued for (until the code is exchanged)."""

    grant = models.OneToOneField(
        "oauth2_provider.Grant", on_delete=models.CASCADE, primary_key=True, related_name="rb_link"
    )
    connection = models.ForeignKey(OAuthConnection, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")  # the connection's

    class Meta:
        constraints = [SameOrganization(field="connection", name="oauth_grant_link_same_org")]

    def __str__(self) -> str:
        return f"grant {self.pk} → {self.connection_id}"


class OAuthTokenLink(models.Model):
    """Which connection an access token belongs to (refreshed tokens inherit it)."""

    access_token = models.OneToOneField(
        "oauth2_provider.AccessToken", on_delete=models.CASCADE, primary_key=True, related_name="rb_link"
    )
    connection = models.ForeignKey(
        OAuthConnection, on_delete=models.CASCADE, related_name="token_links", db_constraint=False
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")  # the connection's

    class Meta:
        constraints = [SameOrganization(field="connection", name="oauth_token_link_same_org")]

    def __str__(self) -> str:
        return f"access token {self.pk} → {self.connection_id}"


class TeamMember(models.Model):
    """A member of a team, as an identity provider's group says (SCIM Groups, accounts/scim/). Both keys
    repeat the org, so PostgreSQL refuses a row tying a team to a member of another org."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="members", db_constraint=False)
    membership = models.ForeignKey(
        Membership, on_delete=models.CASCADE, related_name="team_memberships", db_constraint=False
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "membership", "organization"], name="team_member_unique"),
            SameOrganization(field="team", name="team_member_team_same_org"),
            SameOrganization(field="membership", name="team_member_membership_same_org"),
        ]

    def __str__(self) -> str:
        return f"team {self.team_id} ∋ member {self.membership_id}"


class ScimToken(models.Model):
    """The bearer token an identity provider provisions an org with (``/scim/v2/``). Like an API token:
    the raw value is shown once, only its SHA-256 digest is kept; the org it acts in is the token's and
    nothing else (docs/identity.md#provisioning-and-departure)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_tokens")
    label = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="First characters of the token, for display")
    digest = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # digest first: looked up by its digest alone, before the org is known (as ApiToken's)
            models.UniqueConstraint(fields=["digest", "organization"], name="scimtoken_digest_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.label})"


# single sign-on's rows: an organization's identity provider and its verified e-mail domains
from accounts.models_sso import SsoConnection, SsoDomain  # noqa: E402, F401
