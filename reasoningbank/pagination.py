"""The one pagination of every REST list: ``?page=&page_size=`` → ``{count, next, previous, results}``.

Strict on purpose: ``page_size=null``, ``page=`` or ``page_size=500`` are a 400 naming the parameter
rather than silently falling back to a default the caller did not ask for. A page past the end is
a 404 saying how many pages there are. It is REST_FRAMEWORK's ``DEFAULT_PAGINATION_CLASS``, which every
token-authenticated view has (``OrgAPIView.pagination_class``); a view that pages calls
``self.paginate_queryset(rows)`` and ``self.get_paginated_response(data)`` and declares
``Serializer(many=True)`` as its 200 response, so the OpenAPI schema shows the paged object
(``Paginated…List``) and these two parameters with their bounds.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

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
