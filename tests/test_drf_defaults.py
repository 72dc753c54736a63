"""The REST API's defaults are set once, in ``REST_FRAMEWORK`` (reasoningbank/settings/api.py): JSON bodies
only, the one pagination, the renderers, the token authentication. A view repeats none of them — a class
attribute (``parser_classes = [JSONParser]``) or a ``get_…()`` override that comes to the default is a second
place to keep in step, and eleven copies of one pagination had been — and a view that really differs says
why in a comment beside the attribute.

Every ``APIView`` of the service's packages is checked, the bases the views share included; the URL conf
is imported so that each one exists."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

from rest_framework.settings import api_settings
from rest_framework.views import APIView

from accounts.api_base import OrgAPIView
from reasoningbank.pagination import CursorPagination
from tests.repo_files import REPO

# a view's attribute, its REST_FRAMEWORK default, the method that hands out its instances (None: none)
DEFAULTS = {
    "parser_classes": ("DEFAULT_PARSER_CLASSES", "get_parsers"),
    "renderer_classes": ("DEFAULT_RENDERER_CLASSES", "get_renderers"),
    "authentication_classes": ("DEFAULT_AUTHENTICATION_CLASSES", "get_authenticators"),
    "permission_classes": ("DEFAULT_PERMISSION_CLASSES", "get_permissions"),
    "throttle_classes": ("DEFAULT_THROTTLE_CLASSES", "get_throttles"),
    "content_negotiation_class": ("DEFAULT_CONTENT_NEGOTIATION_CLASS", None),
    "metadata_class": ("DEFAULT_METADATA_CLASS", None),
    "versioning_class": ("DEFAULT_VERSIONING_CLASS", None),
    "pagination_class": ("DEFAULT_PAGINATION_CLASS", None),
}


def first_party(cls: type) -> bool:
    package = cls.__module__.split(".")[0]
    return package != "tests" and (REPO / package / "__init__.py").is_file()


def service_views() -> list[type[APIView]]:
    importlib.import_module("reasoningbank.urls")

    def below(cls: type[APIView]) -> Iterator[type[APIView]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    return sorted({view for view in below(APIView) if first_party(view)}, key=lambda view: view.__qualname__)


def same(value: Any, default: Any) -> bool:
    return list(value) == list(default) if isinstance(value, list | tuple) else value is default


def commented(cls: type, attribute: str) -> bool:
    """A ``#`` comment on the attribute's line or the lines just above it, in the class's own source."""
    lines, _ = inspect.getsourcelines(cls)
    for number, line in enumerate(lines):
        if re.match(rf"\s+{attribute}\s*[:=]", line):
            above = number
            while above > 0 and lines[above - 1].strip().startswith("#"):
                above -= 1
            return "#" in line or above < number
    return False


def test_the_scan_sees_the_views_and_their_shared_bases() -> None:
    names = {view.__qualname__ for view in service_views()}
    assert {"OrgAPIView", "MemoryAPIView", "MemoryListView", "ImportView", "SubscriptionListView"} <= names


def test_no_view_declares_a_rest_framework_default_again() -> None:
    repeated = []
    for view in service_views():
        for attribute, (setting, _) in DEFAULTS.items():
            if attribute in vars(view) and same(vars(view)[attribute], getattr(api_settings, setting)):
                if (view, attribute) != (OrgAPIView, "pagination_class"):
                    repeated.append(f"{view.__module__}.{view.__qualname__}.{attribute}")
    assert not repeated, f"these equal REST_FRAMEWORK's default in reasoningbank/settings/api.py: {repeated}"


def test_the_base_view_reads_the_pagination_from_the_settings() -> None:
    # an APIView has no pagination of its own (only a GenericAPIView reads the setting): the base view takes it
    assert OrgAPIView.pagination_class is api_settings.DEFAULT_PAGINATION_CLASS
    # the one other paging is a log's, by cursor (reasoningbank/pagination.py), declared with its reason
    own = [view for view in service_views() if "pagination_class" in vars(view)]
    assert [view for view in own if vars(view)["pagination_class"] is not CursorPagination] == [OrgAPIView]


def test_no_view_overrides_a_getter_to_hand_out_the_default() -> None:
    repeated = []
    for view in service_views():
        for setting, getter in DEFAULTS.values():
            if getter and getter in vars(view):
                handed = [type(instance) for instance in getattr(view(), getter)()]
                if handed == list(getattr(api_settings, setting)):
                    repeated.append(f"{view.__module__}.{view.__qualname__}.{getter}")
    assert not repeated, f"these hand out REST_FRAMEWORK's default: {repeated}"


def test_a_view_that_differs_from_a_default_says_why() -> None:
    unexplained = [
        f"{view.__module__}.{view.__qualname__}.{attribute}"
        for view in service_views()
        for attribute, (setting, _) in DEFAULTS.items()
        if attribute in vars(view)
        and not same(vars(view)[attribute], getattr(api_settings, setting))
        and not commented(view, attribute)
    ]
    assert not unexplained, f"say why in a comment beside the attribute: {unexplained}"
