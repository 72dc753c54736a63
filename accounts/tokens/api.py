"""REST views for tenancy: who am I, which projects can I reach, and tying a project to its repository's
remote (docs/code-memory.md#projects-by-repository).

Texts in ``extend_schema`` are the public API documentation (no class docstrings on the views:
drf-spectacular would publish them as operation descriptions).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import access_project, reachable_projects
from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_READ
from accounts.organizations.services import project_repository_set
from accounts.tokens.selectors import principal_describe
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import EmptyQuerySerializer, StrictCharField, StrictSerializer

TAGS = ["account"]


class ProjectSerializer(serializers.Serializer):
    """A project the token can reach."""

    slug = serializers.CharField(help_text="what the API's `project` fields and parameters take")
    name = serializers.CharField()
    team = serializers.CharField(source="team.slug", allow_null=True, default=None, help_text="its team's slug")
    repository = serializers.CharField(
        help_text="the git remote it is tied to (host/owner/name), empty when none: agents in a clone of it reach "
        "this project without naming it"
    )
    created_at = serializers.DateTimeField()


class MeOrganizationSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    plan = serializers.CharField(help_text="free, pro, teams or enterprise")


class MeTokenSerializer(serializers.Serializer):
    prefix = serializers.CharField(help_text="the token's first characters, as shown in the dashboard")
    label = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    restricted = serializers.BooleanField(help_text="limited to some projects or teams")


class MeProjectSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    team = serializers.CharField(allow_null=True)


class MeSerializer(serializers.Serializer):
    """The calling token: its organization, scopes and the projects it reaches."""

    organization = MeOrganizationSerializer()
    token = MeTokenSerializer(allow_null=True)
    scopes = serializers.ListField(child=serializers.CharField())
    projects = MeProjectSerializer(many=True)


class MeView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="me_retrieve",
        summary="Check the token",
        description=(
            "The organization, plan, scopes and reachable projects of the token that calls: the quickest way "
            "for an agent to check its configuration. Needs `memories:read`."
        ),
        responses={200: MeSerializer, **error_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response(principal_describe(self.principal))


class ProjectListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="projects_list",
        summary="List reachable projects",
        description=(
            "The projects the token can read and write in, one page at a time, like every list of the API. "
            "Their `slug` is what the `project` fields and parameters take. Needs `memories:read`."
        ),
        responses={200: ProjectSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        EmptyQuerySerializer(data=request.query_params).is_valid(raise_exception=True)
        page = self.paginate_queryset(reachable_projects(self.principal).order_by("slug"))
        return self.get_paginated_response(ProjectSerializer(page, many=True).data)


PROJECT_SLUG = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="the project's slug")


class ProjectUpdateSerializer(StrictSerializer):
    repository = StrictCharField(
        max_length=600,
        allow_blank=True,
        help_text="the git remote of the project's repository, any spelling (stored as host/owner/name); "
        "empty unties it",
    )


class ProjectDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "PATCH": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="projects_retrieve",
        summary="Get a project",
        description="One project the token can reach, with the repository it is tied to. Needs `memories:read`.",
        parameters=[PROJECT_SLUG],
        responses={200: ProjectSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(ProjectSerializer(access_project(self.principal, slug)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="projects_update",
        summary="Tie a project to its repository",
        description=(
            "Set the git remote of the project's repository (`git remote get-url origin`, any spelling: it is "
            "stored as `host/owner/name`); an empty string unties it. Agents whose working directory is a clone "
            "of that repository then reach this project without naming it: the agent hooks send their remote as "
            "`repository` (docs/code-memory.md#projects-by-repository). A remote is tied to at most one project "
            "of the organization: one already tied elsewhere is a 409 naming that project. Needs `admin`."
        ),
        parameters=[PROJECT_SLUG],
        request=ProjectUpdateSerializer,
        responses={
            200: ProjectSerializer,
            **error_responses(400, 401, 403, 404, 415),
            **error_responses(409, conflict="The remote is already tied to another project."),
        },
    )
    def patch(self, request: Request, slug: str) -> Response:
        project = access_project(self.principal, slug)
        body = ProjectUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project = project_repository_set(
            project=project, repository=body.validated_data["repository"], actor=self.principal
        )
        return Response(ProjectSerializer(project).data)
