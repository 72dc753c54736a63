"""``GET /api/v1/audit``: the organization's audit log, newest first, filtered and paged by cursor
(docs/identity.md#the-audit-log). Owners' and admins' business: the ``admin`` scope and a token for the
whole organization. Texts in ``extend_schema`` are the public API documentation (no class docstrings on
the views: drf-spectacular would publish them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.audit_log.selectors import (
    FILTER_TEXT_MAX,
    TARGET_MAX,
    VERB_MAX,
    AuditFilter,
    audit_admin_require,
    audit_event_describe,
    audit_events_list,
    audit_filter_check,
)
from accounts.models import SCOPE_ADMIN
from reasoningbank.api_errors import error_responses
from reasoningbank.pagination import CursorPagination
from reasoningbank.serializers import EMPTY_VALUE, StrictQuerySerializer

TAGS = ["audit"]


class AuditQuerySerializer(StrictQuerySerializer):
    verb = serializers.RegexField(
        r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$",
        required=False,
        max_length=VERB_MAX,
        help_text="only this verb (`auth.sign_in`, `token.revoke`, …: docs/identity.md#the-audit-log)",
    )
    category = serializers.RegexField(
        r"^[a-z][a-z0-9_]*$",
        required=False,
        max_length=VERB_MAX,
        help_text="only the verbs of this category, the part before the first dot (`auth`, `token`, `webhook`)",
    )
    actor = serializers.CharField(
        required=False,
        max_length=FILTER_TEXT_MAX,
        help_text="only actors whose label holds this text, in any case (`alice@acme.test`, `token:rb_ab12`)",
    )
    target_type = serializers.CharField(
        required=False,
        max_length=TARGET_MAX,
        help_text="only rows on this kind of object (`user`, `apitoken`, `memory`)",
    )
    target_id = serializers.CharField(required=False, max_length=TARGET_MAX, help_text="only rows on this object's id")
    since = serializers.DateTimeField(required=False, help_text="only rows at or after this moment (ISO 8601)")
    until = serializers.DateTimeField(
        required=False, help_text="only rows before this moment (ISO 8601); later than `since`, else 422"
    )

    def to_internal_value(self, data: Any) -> Any:
        if "page" in data:  # the page-number paging's parameter would be silently ignored here
            raise serializers.ValidationError(
                {"page": ["This list is paged by cursor: follow the `next` link (its `cursor`), or leave `page` out."]}
            )
        # the cursor is the paging's (CursorPagination checks it and declares it in the schema)
        data = data.copy()
        cursors = data.pop(CursorPagination.cursor_query_param, [])
        if any(not cursor.strip() for cursor in cursors):
            raise serializers.ValidationError({CursorPagination.cursor_query_param: [EMPTY_VALUE]})
        return super().to_internal_value(data)


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    verb = serializers.CharField(help_text="what happened, `<category>.<action>`")
    actor = serializers.CharField(
        help_text="who: `user:<email>`, `token:<prefix>`, `app:<id> user:<email>`, `system` or `anonymous`"
    )
    actor_user_id = serializers.IntegerField(allow_null=True, help_text="the acting member's user id, if any")
    actor_token_id = serializers.IntegerField(allow_null=True, help_text="the acting API token's id, if any")
    target_type = serializers.CharField(help_text="the kind of object acted on (empty when none)")
    target_id = serializers.CharField(help_text="its id (empty when none)")
    ip = serializers.IPAddressField(allow_null=True, help_text="the client's address; null for the system's own work")
    client = serializers.CharField(
        help_text="the client: an MCP client's name and version, else the User-Agent; empty for the system's own work"
    )
    data = serializers.DictField(help_text="what changed, by verb (`from`/`to`, counts, the method of a sign-in)")


class AuditEventListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}
    # cursor paging, not the API's page numbers: the log grows while a reader (a SIEM) pages back through it,
    # and a page number would then show rows twice or skip them (reasoningbank/pagination.py)
    pagination_class = CursorPagination

    @extend_schema(
        tags=TAGS,
        operation_id="audit_list",
        summary="The audit log",
        description=(
            "The organization's audit log, newest first: sign-ins and failed sign-ins, role changes, tokens, "
            "OAuth grants, webhooks, exports and imports, plan and budget changes, quarantine decisions and the "
            "rest (the verbs: docs/identity.md#the-audit-log), each with who acted, on what, from which address "
            "and client. Filters combine; `until` must be later than `since` (else 422 `rejected_range`). Paged "
            "by cursor: follow `next` until it is null; a cursor this list did not give is a 422 "
            "`rejected_cursor`. Needs the `admin` scope and a token for the whole organization."
        ),
        parameters=[AuditQuerySerializer],
        responses={200: AuditEventSerializer(many=True), **error_responses(400, 401, 403, 422)},
    )
    def get(self, request: Request) -> Response:
        audit_admin_require(self.principal)  # before the filters: a member learns nothing from a 400
        query = AuditQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = audit_filter_check(AuditFilter(**query.validated_data))
        page = self.paginate_queryset(audit_events_list(self.principal, filters))
        return self.get_paginated_response(
            AuditEventSerializer([audit_event_describe(row) for row in page], many=True).data
        )
