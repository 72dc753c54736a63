"""Reads of OAuth: the connected apps of an organization, and the clients (not tenant data)."""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet

from accounts.access import access_filter
from accounts.models import OAuthConnection, Organization


def oauth_connections_of_org(*, organization: Organization) -> QuerySet[OAuthConnection]:
    """Settings → Connected apps: the org's connected apps, live ones first, newest first."""
    return (
        access_filter(OAuthConnection, organization)
        .select_related("application", "user")
        .prefetch_related("projects", "teams")
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )


def oauth_application(client_id: str) -> Any:
    """The OAuth client (django-oauth-toolkit ``Application``) with this client id, or None. Clients
    are not tenant data: any org's member may connect any client."""
    from oauth2_provider.models import get_application_model

    if not client_id or "\x00" in client_id:
        return None
    return get_application_model().objects.filter(client_id=client_id).first()
