"""The base of every token-authenticated REST view (part of the access layer, see ``access``).

It authenticates tokens, enforces the scope declared per HTTP method (a view that forgets to
declare one fails at import) and offers only org-scoped loaders.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import QuerySet
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.access import Principal, access_filter, access_get
from accounts.models import Organization

M = TypeVar("M", bound=models.Model)


class HasRequiredScope(BasePermission):
    """Checks the scope the view declared for this HTTP method; 403 names the missing scope."""

    message = "This token lacks the required scope."

    def has_permission(self, request: Request, view: APIView) -> bool:
        principal = request.user
        if not isinstance(principal, Principal):
            return False
        required = getattr(view, "required_scopes", {}).get(request.method or "")
        if required is None:
            # undefined handlers fall through so DRF answers 405, not a misleading 403
            return request.method == "OPTIONS" or not hasattr(view, (request.method or "").lower())
        if not principal.has_scope(required):
            self.message = f"This token lacks the '{required}' scope."
            return False
        return True


class OrgAPIView(APIView):
    """Base for every token-authenticated REST view.

    Subclasses declare ``required_scopes = {"GET": "memories:read", ...}`` for every handler they
    define (checked when the class is created) and load rows only through ``self.get_in_org`` /
    ``self.in_org``, which apply the token's org.
    """

    permission_classes = [HasRequiredScope]
    required_scopes: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in cls.http_method_names:
            if method in ("options", "head") or not hasattr(cls, method):
                continue
            if method.upper() not in cls.required_scopes:
                raise ImproperlyConfigured(
                    f"{cls.__name__}.{method} has no entry in required_scopes; every handler must declare its scope"
                )

    def get_authenticators(self) -> list[Any]:
        from accounts.authentication import ApiTokenAuthentication

        return [ApiTokenAuthentication()]

    @property
    def principal(self) -> Principal:
        principal = self.request.user
        assert isinstance(principal, Principal)
        return principal

    @property
    def org(self) -> Organization:
        return self.principal.organization

    def in_org(self, model_or_qs: type[M] | QuerySet[M]) -> QuerySet[M]:
        return access_filter(model_or_qs, self.principal)

    def get_in_org(self, model_or_qs: type[M] | QuerySet[M], **lookup: Any) -> M:
        return access_get(model_or_qs, self.principal, **lookup)


