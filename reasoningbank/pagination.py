"""The one pagination of every REST list: ``?page=&page_size=`` → ``{count, next, previous, results}``;
and, for a log read while it grows (the audit log), ``CursorPagination`` below.

Strict on purpose: ``page_size=null``, ``page=`` or ``page_size=500`` are a 400 naming the parameter
rather than silently falling back to a default the caller did not ask for. A page past the end is
a 404 saying how many pages there are. It is REST_FRAMEWORK's ``DEFAULT_PAGINATION_CLASS``, which every
token-authenticated view has (``OrgAPIView.pagination_class``); a view that pages calls
``self.paginate_queryset(rows)`` and ``self.get_paginated_response(data)`` and declares
``Serializer(many=True)`` as its 200 response, so the OpenAPI schema shows the paged object
(``Paginated…List``) and these two parameters with their bounds.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import BasePagination, PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from reasoningbank.errors import Rejected

PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 200


def _positive_int(request: Request, name: str, *, default: int, maximum: int | None = None) -> int:
    values = request.query_params.getlist(name)
    if not values:
        return default
    raw = values[-1]
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ValidationError({name: [f"Must be a whole number of at least 1, not {raw!r}."]})
    value = int(raw)
    if maximum is not None and value > maximum:
        raise ValidationError({name: [f"Must be at most {maximum}."]})
    return value


class Pagination(PageNumberPagination):
    page_size = PAGE_SIZE_DEFAULT
    page_size_query_param = "page_size"
    max_page_size = PAGE_SIZE_MAX
    page_query_description = "Page number, from 1."
    page_size_query_description = f"Results per page (default {PAGE_SIZE_DEFAULT}, at most {PAGE_SIZE_MAX})."

    def get_page_size(self, request: Request) -> int:
        return _positive_int(request, self.page_size_query_param, default=self.page_size, maximum=self.max_page_size)

    def get_page_number(self, request: Request, paginator: Paginator) -> int:  # type: ignore[override]
        return _positive_int(request, self.page_query_param, default=1)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        self.request = request
        paginator = self.django_paginator_class(queryset, self.get_page_size(request))
        number = self.get_page_number(request, paginator)
        if number > paginator.num_pages:
            raise NotFound(
                f"Page {number} does not exist: this list has {paginator.num_pages} "
                f"page{'s' * (paginator.num_pages != 1)} at this page_size."
            )
        self.page: Page = paginator.page(number)
        return list(self.page)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        paged = super().get_paginated_response_schema(schema)
        paged["required"] = ["count", "next", "previous", "results"]
        properties = paged["properties"]
        properties["count"]["description"] = "how many results there are over all pages"
        properties["next"]["description"] = "the URL of the next page, null on the last"
        properties["previous"]["description"] = "the URL of the previous page, null on the first"
        return paged

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        page, page_size = super().get_schema_operation_parameters(view)
        page["schema"] = {"type": "integer", "minimum": 1, "default": 1}
        page_size["schema"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": PAGE_SIZE_MAX,
            "default": PAGE_SIZE_DEFAULT,
        }
        return [page, page_size]


# --- cursor paging, for logs --------------------------------------------------------------------------

CURSOR_MAX = 200  # characters: a cursor this class made is about 60


class CursorPagination(BasePagination):
    """Keyset paging of a log, newest first (``created_at``, then ``id``): ``?cursor=&page_size=`` →
    ``{next, results}``. The one other pagination of the API, for a list that grows while it is read:
    a page number would shift as rows arrive (a reader paging back through the audit log would see rows
    twice or skip them) and the page-number paging's ``count`` is a count of the whole table on every
    request. ``next`` is the URL of the following page (null on the last); a cursor is opaque, and one
    this class did not make is a 422 ``rejected_cursor`` (it matches the schema's pattern, so it is
    not a 400). A view declares it in ``pagination_class`` and says why (tests/test_drf_defaults.py)."""

    page_size = PAGE_SIZE_DEFAULT
    max_page_size = PAGE_SIZE_MAX
    cursor_query_param = "cursor"
    page_size_query_param = "page_size"

    def paginate_queryset(self, queryset: QuerySet[Any], request: Request, view: Any = None) -> list[Any]:
        self.request = request
        size = _positive_int(request, self.page_size_query_param, default=self.page_size, maximum=self.max_page_size)
        position = self.cursor_decode(request.query_params.get(self.cursor_query_param))
        if position is not None:
            created_at, pk = position
            queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
        rows = list(queryset.order_by("-created_at", "-pk")[: size + 1])
        self.next_position = (rows[size - 1].created_at, rows[size - 1].pk) if len(rows) > size else None
        return rows[:size]

    @staticmethod
    def cursor_encode(created_at: datetime, pk: int) -> str:
        raw = json.dumps([created_at.isoformat(), pk], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def cursor_decode(self, cursor: str | None) -> tuple[datetime, int] | None:
        if cursor is None:
            return None
        problem = Rejected(
            "Not a cursor of this list: pass the cursor of a `next` link as it is, or leave it out for the first page.",
            field=self.cursor_query_param,
            code="rejected_cursor",
        )
        if len(cursor) > CURSOR_MAX:
            raise problem
        try:
            created, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            created_at = datetime.fromisoformat(created)
        except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
            raise problem from None
        if created_at.tzinfo is None or not isinstance(pk, int) or isinstance(pk, bool) or pk < 1:
            raise problem
        return created_at, pk

    def get_next_link(self) -> str | None:
        if self.next_position is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.cursor_query_param, self.cursor_encode(*self.next_position))

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self.get_next_link(), "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["next", "results"],
            "properties": {
                "next": {
                    "type": "string",
                    "nullable": True,
                    "format": "uri",
                    "description": "the URL of the next (older) page, null on the last",
                },
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Where the page starts: the `cursor` of the previous page's `next` link; leave it "
                "out for the newest rows.",
                "schema": {"type": "string", "minLength": 1, "maxLength": CURSOR_MAX, "pattern": "^[A-Za-z0-9_-]+$"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Results per page (default {PAGE_SIZE_DEFAULT}, at most {PAGE_SIZE_MAX}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": PAGE_SIZE_MAX, "default": PAGE_SIZE_DEFAULT},
            },
        ]
