"""Single sign-on per organization: OpenID Connect and SAML 2.0 on allauth's socialaccount, verified
e-mail domains, the require-SSO policy, just-in-time membership and group → role mapping
(docs/identity.md#single-sign-on)."""
