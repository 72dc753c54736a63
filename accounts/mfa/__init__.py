"""Multi-factor sign-in on allauth's ``allauth.mfa``: the organization's "require MFA" policy, the gate
that sends members without a second factor to enrolment, the OAuth consent check, the enrolled-members
page and the audit rows of every enrolment (docs/identity.md#multi-factor-authentication)."""
