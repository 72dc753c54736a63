"""What the audit log records, verb by verb: the table of docs/identity.md#the-audit-log and the filter of
the dashboard page come from here, and tests/accounts/audit_log/test_verbs.py holds the code's verbs to it.

A verb is ``<category>.<action>``, lower case; the category is the part before the first dot, and a
filter by category takes every verb of it. Plain Python: the names are the public contract (exports,
the API and the ``audit.event`` webhook carry them)."""

from __future__ import annotations

import re

__pure__ = True

VERB_PATTERN = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")
CATEGORY_PATTERN = re.compile(r"[a-z][a-z0-9_]*")

# the new rows of the log's own features
VERB_SIGN_IN = "auth.sign_in"
VERB_SIGN_IN_FAILED = "auth.sign_in_failed"
VERB_SIGN_OUT = "auth.sign_out"
VERB_EXPORT = "audit.export"

VERBS: dict[str, str] = {
    # sign-in
    VERB_SIGN_IN: "a member signed in (`method`: password, sso, …), a row in each of their organizations",
    VERB_SIGN_IN_FAILED: "a sign-in with a member's email failed (wrong password); actor `anonymous`",
    VERB_SIGN_OUT: "a member signed out of the dashboard",
    # people and roles
    "organization.create": "an organization was created",
    "membership.add": "a member was added (invited) with a role",
    "membership.role_change": "a member's role changed (`from`, `to`)",
    "membership.remove": "a member was removed",
    "team.create": "a team was created",
    "project.create": "a project was created",
    "project.repository": "a project's repository was set or changed",
    # credentials
    "token.create": "an API token was created (its scopes and reach)",
    "token.revoke": "an API token was revoked (by a person, or because it was found leaked in a text)",
    "token.write_suspend": "a token's or a connected app's writes were suspended after a burst of flagged writes",
    "token.write_unsuspend": "an admin lifted a write suspension",
    "oauth.grant": "a member authorised an agent (an OAuth client) to act for them",
    "oauth.revoke": "a connected app's grant was revoked (its access and refresh tokens)",
    "oauth.token_revoke": "an OAuth token was revoked because it was found leaked in a text",
    "org.oauth_client_trust": "an admin marked an OAuth client as trusted for the organization",
    "org.oauth_client_distrust": "an admin withdrew an OAuth client's trust",
    # plan, spend and policy
    "organization.plan_change": "the plan changed (`from`, `to`)",
    "llm.budget_set": "the LLM spend caps changed (`from`, `to`)",
    "llm.budget_alert": "the LLM spend reached its alert threshold (by the system)",
    "organization.poisoning_policy": "the trust policy for instruction-like writes changed",
    "organization.injection_policy": "the trust policy for injected context changed",
    "organization.trusted_hosts": "the trusted hosts of the trust policy changed",
    "organization.auto_promote": "institutional promotion was switched on or off",
    # webhooks
    "webhook.create": "a webhook subscription was created (its URL and events)",
    "webhook.update": "a webhook subscription was changed, switched off or on",
    "webhook.delete": "a webhook subscription was deleted",
    "webhook.rotate_secret": "a webhook's signing secret was rotated (by an admin, or because it was found leaked)",
    "webhook.redeliver": "an admin sent a webhook delivery again",
    # export and import, and the log itself
    "bank.export": "the bank (or a project of it) was exported",
    "bank.import": "memories were imported",
    VERB_EXPORT: "the audit log was exported (its format and filters)",
    # quarantine and moderation
    "memory.quarantine": "a memory was held in quarantine for an admin's review",
    "memory.flag": "a memory was stored with instruction-smell flags",
    "memory.quarantine_approve": "an admin approved a quarantined memory",
    "memory.quarantine_delete": "an admin deleted a quarantined memory",
    "summary.quarantine_approve": "an admin approved a quarantined summary",
    "summary.quarantine_delete": "an admin deleted a quarantined summary",
    "memory.injection_clear": "an admin cleared a memory's injection flag",
    "memory.rejected": "the write gate refused a memory",
    "memory.record": "a memory was recorded",
    "memory.update": "a memory was edited",
    "memory.archive": "a memory was archived",
    "memory.restore": "a memory was restored",
    "memory.unmerge": "a merge was undone",
    "memory.feedback": "feedback on a memory was recorded",
    "memory.consolidate": "consolidation merged memories",
    "memory.tier": "consolidation moved memories between tiers",
    "memory.promote": "a memory was promoted (the ladder or institutional promotion)",
    "contradiction.resolve": "a contradiction was resolved",
    "review.decide": "a moderator decided a review item",
    "promotion.propose": "a memory was proposed for team or organization scope",
    "promotion.accept": "a proposed promotion was accepted",
    "promotion.reject": "a proposed promotion was rejected",
    "summary.remove": "a summary was removed",
    "summary.repair": "a summary was repaired",
    # work
    "consolidation.request": "a consolidation run was requested",
    "consolidation.schedule": "a project's consolidation schedule changed",
    "session.submit": "a session was handed in",
    "session.continue": "a session was handed in again",
    "session.retry": "a session's distillation was retried",
    "session.code_report": "a session's code report was recorded",
    "code.changes": "code changes were reported",
    "code.reverify": "memories' code anchors were verified again",
    "history.seed": "memories were seeded from a repository's history",
    # single sign-on, second factors, provisioning and departure (docs/identity.md)
    "member.jit_join": "a person joined on their first single sign-on (the role their groups map to, or the default)",
    "member.deactivate": "a member was deactivated (by an admin or SCIM): tokens, apps and sessions revoked",
    "member.reactivate": "a deactivated member was reactivated with the role they had",
    "mfa.enroll": "a member added an authenticator app or a passkey",
    "mfa.remove": "a member removed a second factor",
    "mfa.recovery_codes_generate": "a member's recovery codes were made",
    "mfa.policy_change": 'an owner or admin turned "require MFA" on or off',
    "sso.configure": "the organization's identity provider was configured or changed (never the secret)",
    "sso.domain_add": "an e-mail domain was added for verification",
    "sso.domain_remove": "an e-mail domain was removed",
    "sso.domain_verify": "an e-mail domain was verified by its DNS TXT record",
    "sso.policy_change": 'an owner turned "require SSO" on or off',
    "scim.token_create": "a SCIM token was created",
    "scim.token_revoke": "a SCIM token was revoked",
    "scim.user_create": "the identity provider provisioned a member over SCIM",
    "scim.user_update": "the identity provider changed a member over SCIM",
    "scim.group_create": "the identity provider created a team over SCIM",
    "scim.group_update": "the identity provider changed a team or its members over SCIM",
    "scim.group_delete": "the identity provider deleted a team over SCIM",
}


# who came in and who read the log, as opposed to what changed: the admins' audit log shows them, the
# overview's recent activity (which every member and viewer sees) does not
ACCESS_CATEGORIES = ("auth",)
ACCESS_VERBS = (VERB_EXPORT,)


def verb_category(verb: str) -> str:
    return verb.split(".", 1)[0]


def verb_categories() -> list[str]:
    """Every category of the catalogue, in alphabetical order."""
    return sorted({verb_category(verb) for verb in VERBS})
