"""The service's URL conf with a dashboard page and an API endpoint that fail, for the error pages' tests
(tests/reasoningbank/test_error_pages.py): Django takes ``handler500`` and the others from the root URL conf."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from reasoningbank.urls import handler400, handler403, handler404, handler500
from reasoningbank.urls import urlpatterns as served

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


def failing_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a view")


urlpatterns = [path("failing/", failing_view), path("api/v1/failing", failing_view), *served]
