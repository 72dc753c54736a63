"""The SCIM 2.0 endpoints under ``/scim/v2/`` (RFC 7644): Users, Groups and the discovery documents.

Thin, like every transport: each view authenticates the SCIM token (the organization comes from it
alone), parses the body with scim2-models in the request's SCIM context, calls a selector or a service
and renders the resource. Every refusal is a SCIM error (``urn:ietf:params:scim:api:messages:2.0:Error``)
with its status: a body that is not JSON or not a valid resource, a filter we cannot answer → 400; no
or a bad token → 401; another organization's id → 404, as a missing one; a taken ``userName`` → 409.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from scim2_models import (
    Context,
    Error,
    Group,
    ListResponse,
    PatchOp,
    ResourceType,
    ResponseParameters,
    Schema,
    SCIMException,
    SearchRequest,
    User,
)

from accounts.access import Principal
from accounts.scim import resources, selectors, services
from accounts.scim.filters import scim_filter_q
from accounts.scim.services_tokens import scim_principal, scim_token_authenticate
from accounts.throttling import Throttled, bearer_failure, request_client_address
from accounts.tokens.authentication import bearer_token_from_header
from reasoningbank.errors import Conflict, InvalidInput, NotFound, ServiceError
from reasoningbank.request_context import request_principal_note

SCIM_CONTENT_TYPE = "application/scim+json"
# the SCIM error types (RFC 7644 section 3.12) a service refusal's code may name
SCIM_TYPES = {"uniqueness", "mutability", "invalidValue", "invalidSyntax", "invalidFilter", "noTarget", "invalidPath"}
UNAUTHORIZED = (
    "Missing or unknown SCIM token: send 'Authorization: Bearer rbscim_…', a token made on the dashboard's "
    "Settings → Provisioning page."
)


def scim_response(data: dict[str, Any], status: int = 200, **headers: str) -> JsonResponse:
    response = JsonResponse(
        data, status=status, content_type=SCIM_CONTENT_TYPE, json_dumps_params={"ensure_ascii": False}
    )
    for name, value in headers.items():
        response[name] = value
    return response


def scim_error(status: int, detail: str, scim_type: str | None = None, **headers: str) -> JsonResponse:
    error = Error(status=status, scim_type=scim_type, detail=detail)
    return scim_response(error.model_dump(), status=status, **headers)


def _service_error(exc: ServiceError) -> JsonResponse:
    if isinstance(exc, NotFound):
        return scim_error(404, exc.message)
    if isinstance(exc, Conflict):
        return scim_error(409, exc.message, "uniqueness")
    if isinstance(exc, InvalidInput):
        return scim_error(400, exc.message, exc.code if exc.code in SCIM_TYPES else "invalidValue")
    return scim_error(exc.status if exc.status in (403, 429) else 400, exc.message)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInput("the body is not JSON", code="invalidSyntax") from None
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object", code="invalidSyntax")
    return body


def _page(request: HttpRequest) -> tuple[SearchRequest, int, int]:
    """The query's SearchRequest, its 1-based start and its page size (RFC 7644 section 3.4.2.4: a start
    below 1 is 1, a count below 0 is 0, more than we serve at once is our most)."""
    search: SearchRequest[Any] = SearchRequest.model_validate(request.GET.dict())
    start = max(1, search.start_index or 1)
    count = resources.PAGE_DEFAULT if search.count is None else max(0, min(search.count, resources.PAGE_MAX))
    return search, start, count


@method_decorator(csrf_exempt, name="dispatch")
class ScimView(View):
    """Authenticates the SCIM token and turns every refusal into a SCIM error."""

    principal: Principal

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        raw = bearer_token_from_header(request.META.get("HTTP_AUTHORIZATION"))
        token = scim_token_authenticate(raw) if raw else None
        if token is None:
            if raw:
                throttled = bearer_failure(request_client_address(request), raw)
                if isinstance(throttled, Throttled):
                    return scim_error(429, throttled.message, **{"Retry-After": str(throttled.retry_after)})
            return scim_error(401, UNAUTHORIZED, **{"WWW-Authenticate": 'Bearer realm="scim"'})
        request_principal_note(org=token.organization.slug, token_prefix=token.prefix)
        self.principal = scim_principal(token)
        try:
            return super().dispatch(request, *args, **kwargs)
        except SCIMException as exc:
            error = exc.to_error()
            return scim_response(error.model_dump(), status=int(error.status or 400))
        except ValidationError as exc:
            error = Error.from_validation_error(exc.errors()[0])
            return scim_response(error.model_dump(), status=int(error.status or 400))
        except ServiceError as exc:
            return _service_error(exc)
        except Http404:
            return scim_error(404, "No such resource in this organization.")

    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        allowed = ", ".join(m.upper() for m in self.http_method_names if hasattr(self, m) and m != "options")
        return scim_error(405, f"{request.method} is not served here; allowed: {allowed}", Allow=allowed)

    @property
    def organization(self) -> Any:
        return self.principal.organization

    def base_url(self) -> str:
        return self.request.build_absolute_uri(reverse("scim-service-provider-config")).rsplit("/", 1)[0]

    def response_parameters(self) -> ResponseParameters:
        return ResponseParameters.model_validate(
            {k: v for k, v in self.request.GET.dict().items() if k in ("attributes", "excludedAttributes")}
        )

    def render(self, resource: Any, context: Context, status: int = 200, **headers: str) -> JsonResponse:
        data = resource.model_dump(scim_ctx=context, response_parameters=self.response_parameters())
        return scim_response(data, status=status, **headers)


def _listing(kind: Any, found: list[Any], *, total: int, start: int, search: Any) -> HttpResponse:
    """A page of a query (RFC 7644 §3.4.2: the total, where the page starts, how many it holds)."""
    listing = kind(total_results=total, start_index=start, items_per_page=len(found), resources=found)
    return scim_response(listing.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=search))


class UsersView(ScimView):
    def get(self, request: HttpRequest) -> HttpResponse:
        search, start, count = _page(request)
        where = scim_filter_q(search.filter, User) if search.filter else None
        rows = selectors.scim_users(organization=self.organization, where=where)
        page = list(rows[start - 1 : start - 1 + count]) if count else []
        base = self.base_url()
        found = [resources.user_resource(m, base_url=base) for m in page]
        return _listing(ListResponse[User], found, total=rows.count(), start=start, search=search)

    def post(self, request: HttpRequest) -> HttpResponse:
        resource: User = User.model_validate(_body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        membership, _ = services.scim_user_create(
            organization=self.organization, actor=self.principal, resource=resource
        )
        made = resources.user_resource(membership, base_url=self.base_url())
        return self.render(
            made, Context.RESOURCE_CREATION_RESPONSE, status=201, Location=f"{self.base_url()}/Users/{membership.pk}"
        )


class UserView(ScimView):
    def get(self, request: HttpRequest, user_id: str) -> HttpResponse:
        membership = selectors.scim_user(organization=self.organization, membership_id=user_id)
        return self.render(
            resources.user_resource(membership, base_url=self.base_url()), Context.RESOURCE_QUERY_RESPONSE
        )

    def put(self, request: HttpRequest, user_id: str) -> HttpResponse:
        membership = selectors.scim_user(organization=self.organization, membership_id=user_id)
        resource: User = User.model_validate(_body(request), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        membership = services.scim_user_apply(membership=membership, actor=self.principal, resource=resource)
        return self.render(
            resources.user_resource(membership, base_url=self.base_url()), Context.RESOURCE_REPLACEMENT_RESPONSE
        )

    def patch(self, request: HttpRequest, user_id: str) -> HttpResponse:
        membership = selectors.scim_user(organization=self.organization, membership_id=user_id)
        patch = PatchOp[User].model_validate(_body(request), scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        current = resources.user_resource(membership, base_url=self.base_url())
        patch.patch(current)
        membership = services.scim_user_apply(membership=membership, actor=self.principal, resource=current)
        return self.render(
            resources.user_resource(membership, base_url=self.base_url()), Context.RESOURCE_PATCH_RESPONSE
        )

    def delete(self, request: HttpRequest, user_id: str) -> HttpResponse:
        membership = selectors.scim_user(organization=self.organization, membership_id=user_id)
        services.scim_user_delete(membership=membership, actor=self.principal)
        return HttpResponse(status=204)


class GroupsView(ScimView):
    def get(self, request: HttpRequest) -> HttpResponse:
        search, start, count = _page(request)
        where = scim_filter_q(search.filter, Group) if search.filter else None
        rows = selectors.scim_groups(organization=self.organization, where=where)
        page = list(rows[start - 1 : start - 1 + count]) if count else []
        members = selectors.scim_groups_members(organization=self.organization, teams=page)
        base = self.base_url()
        found = [resources.group_resource(t, members[t.pk], base_url=base) for t in page]
        return _listing(ListResponse[Group], found, total=rows.count(), start=start, search=search)

    def post(self, request: HttpRequest) -> HttpResponse:
        resource: Group = Group.model_validate(_body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        team = services.scim_group_create(organization=self.organization, actor=self.principal, resource=resource)
        made = resources.group_resource(team, selectors.scim_group_members(team=team), base_url=self.base_url())
        return self.render(
            made, Context.RESOURCE_CREATION_RESPONSE, status=201, Location=f"{self.base_url()}/Groups/{team.pk}"
        )


class GroupView(ScimView):
    def _resource(self, team: Any) -> Group:
        return resources.group_resource(team, selectors.scim_group_members(team=team), base_url=self.base_url())

    def get(self, request: HttpRequest, group_id: str) -> HttpResponse:
        team = selectors.scim_group(organization=self.organization, team_id=group_id)
        return self.render(self._resource(team), Context.RESOURCE_QUERY_RESPONSE)

    def put(self, request: HttpRequest, group_id: str) -> HttpResponse:
        team = selectors.scim_group(organization=self.organization, team_id=group_id)
        resource: Group = Group.model_validate(_body(request), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        team = services.scim_group_apply(team=team, actor=self.principal, resource=resource)
        return self.render(self._resource(team), Context.RESOURCE_REPLACEMENT_RESPONSE)

    def patch(self, request: HttpRequest, group_id: str) -> HttpResponse:
        team = selectors.scim_group(organization=self.organization, team_id=group_id)
        patch = PatchOp[Group].model_validate(_body(request), scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        current = self._resource(team)
        patch.patch(current)
        team = services.scim_group_apply(team=team, actor=self.principal, resource=current)
        return self.render(self._resource(team), Context.RESOURCE_PATCH_RESPONSE)

    def delete(self, request: HttpRequest, group_id: str) -> HttpResponse:
        team = selectors.scim_group(organization=self.organization, team_id=group_id)
        services.scim_group_delete(team=team, actor=self.principal)
        return HttpResponse(status=204)


class ServiceProviderConfigView(ScimView):
    def get(self, request: HttpRequest) -> HttpResponse:
        return scim_response(resources.service_provider_config(base_url=self.base_url()).model_dump())


class ResourceTypesView(ScimView):
    def get(self, request: HttpRequest, type_id: str | None = None) -> HttpResponse:
        found = resources.resource_types(base_url=self.base_url())
        if type_id is not None:
            match = next((t for t in found if t.id == type_id), None)
            if match is None:
                raise Http404
            return scim_response(match.model_dump())
        listing = ListResponse[ResourceType](
            total_results=len(found), start_index=1, items_per_page=len(found), resources=found
        )
        return scim_response(listing.model_dump())


class SchemasView(ScimView):
    def get(self, request: HttpRequest, schema_id: str | None = None) -> HttpResponse:
        found = resources.schemas(base_url=self.base_url())
        if schema_id is not None:
            match = next((s for s in found if s.id == schema_id), None)
            if match is None:
                raise Http404
            return scim_response(match.model_dump())
        listing = ListResponse[Schema](
            total_results=len(found), start_index=1, items_per_page=len(found), resources=found
        )
        return scim_response(listing.model_dump())


@csrf_exempt
def scim_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Anything else under /scim/v2/: a SCIM 404 (Bulk, /Me and the rest are not served)."""
    return scim_error(404, f"No SCIM endpoint at {request.path[:200]!r}: see /scim/v2/ServiceProviderConfig.")
