"""The base of every token-authenticated REST view (part of the access layer, see ``access``).

It authenticates tokens, enforces the scope declared per HTTP method (a view that forgets to
declare one fails at import), charges every request that needs ``memories:write`` to the write limits
(``accounts/write_limits/services.py``) and hands every handler the token's ``Principal``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, Organization
from accounts.oauth.protocol import API_RESOURCE_PATH, bearer_challenge
from accounts.write_limits.services import write_admit

# the scope a request's token lacks, noted by ``HasRequiredScope`` for the 403's challenge
MISSING_SCOPE_ATTRIBUTE = "rb_missing_scope"


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
            setattr(request, MISSING_SCOPE_ATTRIBUTE, required)
            return False
        return True


class OrgAPIView(APIView):
    """Base for every token-authenticated REST view.

    Subclasses declare ``required_scopes = {"GET": "memories:read", ...}`` for every handler they
    define (checked when the class is created) and read rows only through selectors or operation
    contracts that take ``self.principal`` (built on ``accounts.access``'s ``access_filter`` /
    ``access_get``); tests/test_cross_tenant_coverage.py fails on a view module that touches a default
    manager, and on any route without a cross-tenant test.
    """

    permission_classes = [HasRequiredScope]  # a scope per HTTP method, not only a signed-in token (IsAuthenticated)
    required_scopes: dict[str, str] = {}
    # REST_FRAMEWORK's DEFAULT_PAGINATION_CLASS, read here because an APIView (unlike a GenericAPIView) does not;
    # drf-spectacular shows a list response (``Serializer(many=True)``) as paged through it
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # a request that writes to the bank is charged to the token's and the organization's write limits
        # here, at the door, before its body is read or anything is written; a suspended token's writes end
        # here too (docs/security/memory-poisoning.md#write-limits)
        method = request.method or ""
        if method not in SAFE_METHODS and self.required_scopes.get(method) == SCOPE_MEMORIES_WRITE:
            write_admit(self.principal)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        missing = getattr(self.request, MISSING_SCOPE_ATTRIBUTE, None)
        if response.status_code == 403 and missing:
            # RFC 6750 section 3.1: a token without the scope is a 403 naming it, so that an OAuth client can ask
            # for it (docs/agent-api.md#authentication-errors)
            response["WWW-Authenticate"] = bearer_challenge(
                realm="api",
                resource_path=API_RESOURCE_PATH,
                error="insufficient_scope",
                description=str(response.data["detail"]),
                scopes=(missing,),
            )
        return response

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in cls.http_method_names:
            if method in ("options", "head") or not hasattr(cls, method):
                continue
            if method.upper() not in cls.required_scopes:
                raise ImproperlyConfigured(
                    f"{cls.__name__}.{method} has no entry in required_scopes; every handler must declare its scope"
                )

    def paginate_queryset(self, rows: Any) -> list[Any]:
        """The page of ``rows`` the request asks for (``?page=&page_size=``, checked: a bad value is a 400, a
        page past the end a 404); ``get_paginated_response`` then answers it with the count and links."""
        self._paginator = self.pagination_class()
        return self._paginator.paginate_queryset(rows, self.request, view=self) or []

    def get_paginated_response(self, results: Any) -> Response:
        return self._paginator.get_paginated_response(results)

    @property
    def principal(self) -> Principal:
        principal = self.request.user
        assert isinstance(principal, Principal)
        return principal

    @property
    def org(self) -> Organization:
        return self.principal.organization
