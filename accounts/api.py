"""REST views for tenancy: who am I, and which projects can I reach."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import reachable_projects
from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ
from accounts.selectors import principal_describe


class ProjectSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    team = serializers.CharField(source="team.slug", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class MeView(OrgAPIView):
    """The calling token's org, scopes and reachable projects."""

    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "organization": serializers.DictField(),
                "token": serializers.DictField(allow_null=True),
                "scopes": serializers.ListField(child=serializers.CharField()),
                "projects": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    def get(self, request: Request) -> Response:
        return Response(principal_describe(self.principal))


class ProjectListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(responses=ProjectSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(ProjectSerializer(reachable_projects(self.principal), many=True).data)
