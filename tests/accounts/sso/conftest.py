from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone


@pytest.fixture
def acme_sso(cast: Any, settings: Any) -> Any:
    """Acme's OpenID Connect provider (never reached by these tests) and its verified domain acme.test."""
    from accounts.models import SsoDomain
    from accounts.sso.services import sso_oidc_configure

    settings.SSO_ALLOW_HTTP = True
    connection = sso_oidc_configure(
        principal=cast.principal(cast.alice),
        server_url="http://127.0.0.1:9/",
        client_id="acme-client",
        secret="acme-secret",
    )
    SsoDomain.objects.create(organization=cast.org_a, domain="acme.test", token="t", verified_at=timezone.now())
    return connection
