"""Single sign-on per organization (accounts/sso/, docs/identity.md#single-sign-on): allauth's socialaccount
with its openid_connect and saml providers, one SocialApp per organization, made in the dashboard."""

from __future__ import annotations

from reasoningbank.env import env_bool, env_duration, env_list

# every identity provider is an organization's SocialApp row (never one of these settings): the sign-in
# adapter decides whom a provider may sign in (addresses of the organization's verified domains only)
SOCIALACCOUNT_ADAPTER = "accounts.sso.adapter.SocialAccountAdapter"
# an address of a verified domain that already has an account signs in to it (and stays linked)
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
# the organization's provider vouches for its own domains: no confirmation mail after an SSO sign-in
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_AUTO_SIGNUP = True
# sign-in starts with a POST from our own page (CSRF-protected), never a GET a third site could trigger
SOCIALACCOUNT_LOGIN_ON_GET = False
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_OPENID_CONNECT_URL_PREFIX = "oidc"
SOCIALACCOUNT_REQUESTS_TIMEOUT = 10

# an identity provider's address (OIDC server URL, SAML metadata URL) must be https; on, http is taken too
# (a provider on loopback in development and in the tests)
SSO_ALLOW_HTTP = env_bool("SSO_ALLOW_HTTP", False)
# every request to a provider goes to a globally reachable address only (the address guard); on, loopback and
# private addresses are allowed too (development, the tests, an identity provider on the company's network)
SSO_ALLOW_PRIVATE_ADDRESSES = env_bool("SSO_ALLOW_PRIVATE_ADDRESSES", False)
# the DNS servers a domain's TXT record is looked up at ("host" or "host:port"); empty: the system's
SSO_DNS_NAMESERVERS = env_list("SSO_DNS_NAMESERVERS", [])
SSO_DNS_TIMEOUT_SECONDS = env_duration("SSO_DNS_TIMEOUT_SECONDS", "5s")
