"""REST views of write suspensions (docs/security/memory-poisoning.md#write-limits): the organization's
suspended tokens and connected apps, and lifting a suspension. Owners' and admins' business: the
``admin`` scope and a token for the whole organization. Texts in ``extend_schema`` are the public API
documentation (no class docstrings on the views: drf-spectacular would publish them).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import access_get
from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN, ApiToken, OAuthConnection
from accounts.write_limits.selectors import write_suspensions
from accounts.write_limits.services import (
    oauth_connection_write_unsuspend,
    suspension_describe,
    token_write_unsuspend,
)
from reasoningbank.api_errors import error_responses
from reasoningbank.errors import Forbidden
from reasoningbank.serializers import EmptyBodySerializer, EmptyQuerySerializer

TAGS = ["write limits"]
ADMIN_ONLY = " Needs the `admin` scope and a token for the whole organization (not restricted to some projects)."


KIND_HELP = "`token` (an API token) or `connected_app` (an OAuth client a member connected)"


class SuspensionSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text=KIND_HELP)
    id = serializers.IntegerField(help_text="the token's or the connected app's id (the dashboard shows it too)")
    label = serializers.CharField(help_text="one line naming it: the token's prefix and label, or the app and its user")
    prefix = serializers.CharField(required=False, help_text="a token's display prefix")
    token_label = serializers.CharField(required=False, help_text="a token's label")
    client_id = serializers.CharField(required=False, help_text="a connected app's OAuth client id")
    app_name = serializers.CharField(required=False, help_text="a connected app's name")
    user = serializers.CharField(required=False, help_text="the member who connected the app")
    suspended_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField(help_text="why: how many flagged writes within which window")
    unsuspend = serializers.CharField(help_text="the request that lifts it")


class UnsuspendSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text=KIND_HELP)
    id = serializers.IntegerField()
    label = serializers.CharField()
    message = serializers.CharField()


class WriteLimitsAPIView(OrgAPIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.principal.is_restricted:  # before any read: suspensions are the whole organization's
            raise Forbidden("a token restricted to some projects cannot read or lift write suspensions")


class WriteSuspensionListView(WriteLimitsAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="write_suspensions_list",
        summary="Suspended tokens and connected apps",
        description=(
            "The organization's tokens and connected apps whose writes are suspended after a burst of writes the "
            "instruction-smell detector flagged, most recent first: why, since when, and the request that lifts "
            "it. Revoked ones are left out." + ADMIN_ONLY
        ),
        responses={200: SuspensionSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        EmptyQuerySerializer(data=request.query_params).is_valid(raise_exception=True)
        page = self.paginate_queryset(write_suspensions(self.principal.organization))
        rows = [suspension_describe(row) for row in page]
        return self.get_paginated_response(SuspensionSerializer(rows, many=True).data)


LIFT_DESCRIPTION = (
    "Give {what} its write rights back, after reviewing what it wrote (the review queue). Its writes are "
    "accepted again at once and its flagged count starts from nothing; audited as `token.write_unsuspend`. "
    "One that is not suspended → 409. A token whose own writes are suspended cannot lift any." + ADMIN_ONLY
)


def _lifted(row: ApiToken | OAuthConnection, label: str) -> Response:
    kind = "token" if isinstance(row, ApiToken) else "connected_app"
    message = f"{label} may write again."
    return Response(UnsuspendSerializer({"kind": kind, "id": row.pk, "label": label, "message": message}).data)


class TokenUnsuspendView(WriteLimitsAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="token_unsuspend",
        summary="Lift a token's write suspension",
        description=LIFT_DESCRIPTION.format(what="a suspended API token"),
        parameters=[OpenApiParameter("token_id", int, OpenApiParameter.PATH, description="the token's id")],
        request=None,
        responses={
            200: UnsuspendSerializer,
            **error_responses(400, 401, 403, 404, 415, conflict="the token is not suspended"),
        },
    )
    def post(self, request: Request, token_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        token = access_get(ApiToken, self.principal, pk=token_id)
        token = token_write_unsuspend(token=token, actor=self.principal)
        return _lifted(token, f"Token {token.prefix}… ({token.label})")


class ConnectedAppUnsuspendView(WriteLimitsAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="connected_app_unsuspend",
        summary="Lift a connected app's write suspension",
        description=LIFT_DESCRIPTION.format(what="a suspended connected app"),
        parameters=[
            OpenApiParameter("connection_id", int, OpenApiParameter.PATH, description="the connected app's id")
        ],
        request=None,
        responses={
            200: UnsuspendSerializer,
            **error_responses(400, 401, 403, 404, 415, conflict="the connected app is not suspended"),
        },
    )
    def post(self, request: Request, connection_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        connection = access_get(
            OAuthConnection.objects.select_related("application", "user"), self.principal, pk=connection_id
        )
        connection = oauth_connection_write_unsuspend(connection=connection, actor=self.principal)
        name = connection.application.name or connection.application.client_id
        return _lifted(connection, f"Connected app {name} of {connection.user.email}")
