"""Write limits and write suspension: a leaked token cannot flood the bank
(docs/security/memory-poisoning.md#write-limits).

Limits (``write_admit``)
    * Every request that writes to the bank — REST with the ``memories:write`` scope, the MCP write
      tools, the dashboard's memory actions, an import — is charged once at the door, before any of
      its work: to its writer (the API token, the connected app, or the member on the dashboard) and to
      the organization, per UTC minute and per UTC day, against the plan's ``token_writes_*`` and
      ``org_writes_*`` (``accounts/plans/catalogue.py``) or the ``WRITE_LIMIT_*`` settings that replace them.
    * Over a limit: a 429 ``write_limited`` with ``Retry-After`` (REST) and the same sentence as an MCP
      tool error, naming the limit, the plan and when to retry; nothing is written.
    * One statement per write: an ``INSERT … ON CONFLICT DO UPDATE`` of the writer's two counters and,
      only when the writer is within its own limits, the organization's two, in the shared counter
      table ``rb_throttle`` (``accounts/throttling.py``), atomic across processes. A refused request
      takes its count back (a second statement, on the refusing path only): a client that retries
      too early does not use up its day, and a writer over its own limit never touches the
      organization's counters, so it cannot crowd out its colleagues.
    * Work the service does on its own (distillation, consolidation, the Django admin's staff) is not
      charged: the request that caused it was.

Suspension (``flagged_write_note``)
    * The quarantine calls it after each write the instruction-smell detector flagged. A token (a
      connected app) with ``WRITE_SUSPEND_FLAGGED`` flagged writes within ``WRITE_SUSPEND_WINDOW`` loses
      its write rights: ``write_suspended_at`` / ``write_suspended_reason``; its writes are then a 403
      ``write_suspended`` naming why and who lifts it; reads go on. The org's admins hear of it: an audit
      row ``token.write_suspend``, the ``security.token_suspended`` webhook (``accounts.events``), a
      dashboard banner. A member on the dashboard is never suspended this way: a person is accountable.
    * An owner or admin lifts it (``token_write_unsuspend`` / ``oauth_connection_write_unsuspend``),
      audited as ``token.write_unsuspend``; the flagged count starts again from nothing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.events import write_suspended
from accounts.models import SCOPE_ADMIN, ApiToken, OAuthConnection, Organization
from accounts.plans.catalogue import plan_change_hint, plan_get
from accounts.throttling import TABLE, counter_clear, counter_hit
from reasoningbank.errors import Conflict, Forbidden, RateLimited
from reasoningbank.health import age_text

logger = logging.getLogger(__name__)

MINUTE, DAY = 60, 86_400
WRITE_LIMITED = "write_limited"
WRITE_SUSPENDED = "write_suspended"
VERB_SUSPEND, VERB_UNSUSPEND = "token.write_suspend", "token.write_unsuspend"


# --- the limits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteLimit:
    """One limit as it applies to one organization: ``value`` None is no limit."""

    name: str  # the plan's limit: token_writes_per_minute, org_writes_per_day, ...
    setting: str  # the setting that replaces the plan's value for every organization
    whose: str  # "token" (each writer) or "org"
    seconds: int  # the window: a UTC minute or a UTC day
    value: int | None
    from_setting: bool

    @property
    def period(self) -> str:
        return "this minute" if self.seconds == MINUTE else "today (UTC)"


_LIMITS = (
    ("token_writes_per_minute", "WRITE_LIMIT_TOKEN_PER_MINUTE", "token", MINUTE),
    ("token_writes_per_day", "WRITE_LIMIT_TOKEN_PER_DAY", "token", DAY),
    ("org_writes_per_minute", "WRITE_LIMIT_ORG_PER_MINUTE", "org", MINUTE),
    ("org_writes_per_day", "WRITE_LIMIT_ORG_PER_DAY", "org", DAY),
)


def write_limits(organization: Organization) -> tuple[WriteLimit, ...]:
    """The four write limits of ``organization``: its plan's, each replaced by its setting when set
    (0 in a setting: no limit)."""
    plan = plan_get(organization.plan)
    limits = []
    for name, setting, whose, seconds in _LIMITS:
        override = getattr(settings, setting)
        if override is None:
            limits.append(WriteLimit(name, setting, whose, seconds, plan.limits.get(name), False))
        else:
            limits.append(WriteLimit(name, setting, whose, seconds, int(override) or None, True))
    return tuple(limits)


@dataclass(frozen=True)
class Writer:
    """Whom a write is charged to: its counter key and how messages name it."""

    key: str
    label: str


def writer_of(principal: Principal) -> Writer | None:
    """The API token, the connected app or the member behind a request; None for the service's own
    work (a system principal, the Django admin's staff), which is not charged."""
    if principal.token is not None:
        return Writer(f"write:token:{principal.token.pk}", f"token {principal.token.prefix}…")
    if principal.oauth_connection is not None:
        connection_ = principal.oauth_connection
        return Writer(f"write:app:{connection_.pk}", f"connected app {_app_name(connection_)}")
    if principal.user is not None and principal.role is not None:
        return Writer(f"write:user:{principal.organization.pk}:{principal.user.pk}", str(principal.user.email))
    return None


def _app_name(connection_: OAuthConnection) -> str:
    application = connection_.application
    return str(application.name or application.client_id)[:100]


# The writer's counters, then the organization's only when the writer is within its own limits (the
# second INSERT reads the first's RETURNING). Each window is aligned on the epoch, so a minute ends on
# the minute and a day at UTC midnight; rows are locked in the order given, the same in every
# statement here, so two writes never wait on each other in a cycle.
_ADMIT_SQL = f"""
WITH clock AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t),
wanted (key, secs, lim, ord, org) AS (VALUES
    (%(writer_minute)s::varchar, {MINUTE}::float8, %(writer_minute_limit)s::int, 1, false),
    (%(writer_day)s::varchar, {DAY}::float8, %(writer_day_limit)s::int, 2, false),
    (%(org_minute)s::varchar, {MINUTE}::float8, %(org_minute_limit)s::int, 3, true),
    (%(org_day)s::varchar, {DAY}::float8, %(org_day_limit)s::int, 4, true)
),
writer AS (
    INSERT INTO {TABLE} AS c (key, count, window_ends_at, blocked_until)
    SELECT w.key, 1, to_timestamp((floor(clock.t / w.secs) + 1) * w.secs), NULL
    FROM wanted w, clock WHERE NOT w.org ORDER BY w.ord
    ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN c.window_ends_at <= clock_timestamp() THEN 1 ELSE c.count + 1 END,
        window_ends_at = CASE WHEN c.window_ends_at <= clock_timestamp()
            THEN EXCLUDED.window_ends_at ELSE c.window_ends_at END
    RETURNING c.key, c.count, c.window_ends_at
),
writer_within AS (
    SELECT coalesce(bool_and(w.lim IS NULL OR r.count <= w.lim), true) AS ok
    FROM writer r JOIN wanted w ON w.key = r.key
),
org AS (
    INSERT INTO {TABLE} AS c (key, count, window_ends_at, blocked_until)
    SELECT w.key, 1, to_timestamp((floor(clock.t / w.secs) + 1) * w.secs), NULL
    FROM wanted w, clock WHERE w.org AND (SELECT ok FROM writer_within) ORDER BY w.ord
    ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN c.window_ends_at <= clock_timestamp() THEN 1 ELSE c.count + 1 END,
        window_ends_at = CASE WHEN c.window_ends_at <= clock_timestamp()
            THEN EXCLUDED.window_ends_at ELSE c.window_ends_at END
    RETURNING c.key, c.count, c.window_ends_at
)
SELECT key, count, window_ends_at, extract(epoch FROM window_ends_at - clock_timestamp())::float8 FROM writer
UNION ALL
SELECT key, count, window_ends_at, extract(epoch FROM window_ends_at - clock_timestamp())::float8 FROM org
"""
# A refused write takes its count back, in the same window only (a window that turned since has
# started again without it). Locked in the admitting statement's order.
_GIVE_BACK_SQL = f"""
WITH back (key, ends, ord) AS (SELECT * FROM unnest(%(keys)s::varchar[], %(ends)s::timestamptz[], %(ords)s::int[])),
locked AS (
    SELECT c.key FROM {TABLE} c JOIN back b ON b.key = c.key AND c.window_ends_at = b.ends
    ORDER BY b.ord FOR UPDATE OF c
)
UPDATE {TABLE} c SET count = c.count - 1 FROM locked l WHERE c.key = l.key AND c.count > 0
"""


@dataclass(frozen=True)
class _Counted:
    limit: WriteLimit
    key: str
    count: int
    window_ends_at: Any
    seconds_left: float

    @property
    def over(self) -> bool:
        return self.limit.value is not None and self.count > self.limit.value


def write_admit(principal: Principal) -> None:
    """Charge one write to ``principal``'s writer and organization, or refuse it: a ``Forbidden``
    (``write_suspended``) while the token or connected app is suspended, a ``RateLimited``
    (``write_limited``, 429) when a limit is reached. Called once per request, at the door, before
    the write's own work; no transaction is open there, so the counters' row locks last one statement."""
    write_suspension_check(principal)
    writer = writer_of(principal)
    if writer is None:
        return
    organization = principal.organization
    limits = {(limit.whose, limit.seconds): limit for limit in write_limits(organization)}
    keys = {
        ("token", MINUTE): f"{writer.key}:minute",
        ("token", DAY): f"{writer.key}:day",
        ("org", MINUTE): f"write:org:{organization.pk}:minute",
        ("org", DAY): f"write:org:{organization.pk}:day",
    }
    by_key = {keys[which]: limits[which] for which in keys}
    params = {
        "writer_minute": keys["token", MINUTE],
        "writer_minute_limit": limits["token", MINUTE].value,
        "writer_day": keys["token", DAY],
        "writer_day_limit": limits["token", DAY].value,
        "org_minute": keys["org", MINUTE],
        "org_minute_limit": limits["org", MINUTE].value,
        "org_day": keys["org", DAY],
        "org_day_limit": limits["org", DAY].value,
    }
    with connection.cursor() as cursor:
        cursor.execute(_ADMIT_SQL, params)
        counted = [_Counted(by_key[key], key, int(n), ends, float(left)) for key, n, ends, left in cursor.fetchall()]
    over = [row for row in counted if row.over]
    if not over:
        return
    _give_back(counted, order=list(keys.values()))
    refusing = max(over, key=lambda row: row.seconds_left)
    message = _limited_message(refusing, writer, organization)
    raise RateLimited(message, retry_after=math.ceil(refusing.seconds_left), code=WRITE_LIMITED)


def _give_back(counted: list[_Counted], *, order: list[str]) -> None:
    counted = sorted(counted, key=lambda row: order.index(row.key))
    with connection.cursor() as cursor:
        cursor.execute(
            _GIVE_BACK_SQL,
            {
                "keys": [row.key for row in counted],
                "ends": [row.window_ends_at for row in counted],
                "ords": [order.index(row.key) for row in counted],
            },
        )


def _limited_message(row: _Counted, writer: Writer, organization: Organization) -> str:
    limit = row.limit
    who = writer.label if limit.whose == "token" else f"organization {organization.slug!r}"
    scope = "the limit of each token, connected app or member" if limit.whose == "token" else "its limit"
    if limit.from_setting:
        source = f"{scope}, set for every organization by {limit.setting}"
        hint = f"An operator changes {limit.setting} (docs/configuration.md)."
    else:
        source = f"{scope} on the {organization.plan} plan ({limit.name})"
        hint = "A higher plan writes more. " + plan_change_hint(organization.slug, None)
    writes = f"{limit.value:,} write{'s' * (limit.value != 1)}"
    return (
        f"Write limit reached: {who} has made {writes} {limit.period}, {source}. Nothing was written; retry in "
        f"{math.ceil(row.seconds_left)} seconds. {hint}"
    )


# --- suspension ------------------------------------------------------------------------------------


def write_suspension_check(principal: Principal) -> None:
    """403 ``write_suspended`` while the principal's token or connected app is suspended (the row was
    loaded with the request, so this costs no query)."""
    row: ApiToken | OAuthConnection | None = principal.token or principal.oauth_connection
    if row is None or row.write_suspended_at is None:
        return
    raise Forbidden(_suspended_message(row, principal.organization), code=WRITE_SUSPENDED)


def unsuspend_path(row: ApiToken | OAuthConnection) -> str:
    """The REST endpoint that lifts ``row``'s suspension."""
    if isinstance(row, ApiToken):
        return f"/api/v1/tokens/{row.pk}/unsuspend"
    return f"/api/v1/connected-apps/{row.pk}/unsuspend"


def _suspended_message(row: ApiToken | OAuthConnection, organization: Organization) -> str:
    since = row.write_suspended_at
    when = f"{since:%Y-%m-%d %H:%M} UTC" if since is not None else "now"
    site = settings.SITE_URL.rstrip("/")
    if isinstance(row, ApiToken):
        what, page = f"This token ({row.prefix}…)", f"Settings → API tokens ({site}/settings/tokens/)"
    else:
        what, page = f"This app ({_app_name(row)})", f"Settings → Connected apps ({site}/settings/connected-apps/)"
    return (
        f"{what} may not write to {organization.slug!r} since {when}: {row.write_suspended_reason or 'suspended'}. "
        "Nothing was written; reads still work. An owner or admin of the organization reviews what it wrote "
        f"(the review queue) and lifts the suspension under {page} or with POST {unsuspend_path(row)}."
    )


def _flag_key(row: ApiToken | OAuthConnection) -> str:
    return f"flagged:{'token' if isinstance(row, ApiToken) else 'app'}:{row.pk}"


def flagged_write_note(principal: Principal) -> None:
    """A write of ``principal`` was flagged by the instruction-smell detector: counted for its token or
    connected app, and at ``WRITE_SUSPEND_FLAGGED`` within ``WRITE_SUSPEND_WINDOW`` its write rights are
    suspended. A member on the dashboard (a person, accountable) and the service's own work are not
    counted. Runs inside the flagged write's transaction: if that rolls back, so does the suspension."""
    row: ApiToken | OAuthConnection | None = principal.token or principal.oauth_connection
    if row is None:
        return
    window = float(settings.WRITE_SUSPEND_WINDOW)
    flagged, _ = counter_hit(_flag_key(row), window=window)
    if flagged < int(settings.WRITE_SUSPEND_FLAGGED) or row.write_suspended_at is not None:
        return
    _suspend(row, principal.organization, flagged=flagged, window=window)


def _suspend(row: ApiToken | OAuthConnection, organization: Organization, *, flagged: int, window: float) -> None:
    now = timezone.now()
    writes = "write" if flagged == 1 else "writes"
    reason = f"{flagged} {writes} flagged by the instruction-smell detector within {age_text(window)}"
    # conditional: of two processes crossing the threshold at once, one suspends (and notifies)
    updated = (
        type(row)
        .objects.filter(pk=row.pk, organization=organization, write_suspended_at__isnull=True)
        .update(write_suspended_at=now, write_suspended_reason=reason)
    )
    if not updated:
        return
    row.write_suspended_at, row.write_suspended_reason = now, reason
    data = suspension_describe(row)
    data.update(flagged_writes=flagged, window_seconds=int(window))
    audit_record(organization=organization, actor=None, verb=VERB_SUSPEND, target=row, data=data)
    logger.warning("write suspension: %s of organization %s (%s)", data["label"], organization.slug, reason)
    write_suspended.send(sender=type(row), organization_id=organization.pk, data=data)


def suspension_describe(row: ApiToken | OAuthConnection) -> dict[str, Any]:
    """What the audit row, the webhook and the REST list say of a suspended token or connected app."""
    common = {
        "id": row.pk,
        "suspended_at": row.write_suspended_at.isoformat() if row.write_suspended_at else None,
        "reason": row.write_suspended_reason,
        "unsuspend": f"POST {unsuspend_path(row)}",
    }
    if isinstance(row, ApiToken):
        return {
            "kind": "token",
            "label": f"token {row.prefix}… ({row.label})",
            "prefix": row.prefix,
            "token_label": row.label,
            **common,
        }
    return {
        "kind": "connected_app",
        "label": f"connected app {_app_name(row)} of {row.user.email}",
        "client_id": row.application.client_id,
        "app_name": row.application.name,
        "user": row.user.email,
        **common,
    }


def _lift_require(actor: Principal) -> None:
    if not actor.has_scope(SCOPE_ADMIN):
        raise Forbidden("lifting a write suspension needs the admin role (or a token with the 'admin' scope)")
    if actor.is_restricted:
        raise Forbidden("a token restricted to some projects cannot lift a write suspension")
    own = actor.token or actor.oauth_connection
    if own is not None and own.write_suspended_at is not None:
        raise Forbidden("a token whose own writes are suspended cannot lift a suspension")


def _unsuspend(row: ApiToken | OAuthConnection, actor: Principal) -> Any:
    _lift_require(actor)
    locked = type(row).objects.select_for_update().get(pk=row.pk, organization=actor.organization)
    if locked.write_suspended_at is None:
        name = f"token {locked.prefix}…" if isinstance(locked, ApiToken) else "this connected app"
        raise Conflict(f"{name} is not suspended: there is nothing to lift")
    before = suspension_describe(row)
    locked.write_suspended_at, locked.write_suspended_reason = None, ""
    locked.save(update_fields=["write_suspended_at", "write_suspended_reason"])
    counter_clear(_flag_key(locked))  # the next flagged write counts from one again
    audit_record(organization=actor.organization, actor=actor, verb=VERB_UNSUSPEND, target=locked, data=before)
    row.write_suspended_at, row.write_suspended_reason = None, ""
    return row


@transaction.atomic
def token_write_unsuspend(*, token: ApiToken, actor: Principal) -> ApiToken:
    """An owner or admin gives a suspended token its write rights back (audited)."""
    result: ApiToken = _unsuspend(token, actor)
    return result


@transaction.atomic
def oauth_connection_write_unsuspend(*, connection: OAuthConnection, actor: Principal) -> OAuthConnection:
    """An owner or admin gives a suspended connected app its write rights back (audited)."""
    result: OAuthConnection = _unsuspend(connection, actor)
    return result

