"""What a dashboard session remembers of single sign-on: the organization it was signed in through (the
OAuth consent of an organization that requires SSO grants agents only from such a session)."""

from __future__ import annotations

from django.http import HttpRequest

from accounts.models import Organization
from accounts.views_base import SESSION_ORG_KEY

# the organization whose provider signed this session in
SSO_SESSION_KEY = "rb_sso_org"


def sso_session_mark(request: HttpRequest, organization: Organization) -> None:
    request.session[SSO_SESSION_KEY] = organization.slug
    request.session[SESSION_ORG_KEY] = organization.slug  # the session acts in it (the org switcher's key)


def sso_session_satisfies(request: HttpRequest, organization: Organization) -> bool:
    """Whether this session may act for ``organization`` under its policy: always when SSO is not required;
    else only when it was signed in through that organization's provider."""
    if not organization.sso_required:
        return True
    return request.session.get(SSO_SESSION_KEY) == organization.slug
