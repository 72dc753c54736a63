"""Access as a wall (docs/tenancy.md#how-the-wall-is-tested): every endpoint has a cross-tenant test.

Every route of the URL conf and every tool of the MCP server must be named by at least one test
marked ``@pytest.mark.cross_tenant("<route or tool name>")`` — a test in which org B's object or
data, asked for with org A's credentials, is a 404 (REST, dashboard), an error result that does not
reveal it (MCP), or simply absent (lists), and in which a write changes nothing. The markers are
found by reading the test sources with ``ast`` (no test is imported or run), so a new view or tool
without such a test fails here, naming it. Routes that hold no tenant data are listed in
``EXEMPT_ROUTES`` with the reason; third-party route families in ``EXEMPT_NAMESPACES`` and
``EXEMPT_VIEW_PACKAGES``.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import anyio
from django.urls import URLPattern, URLResolver, get_resolver

TESTS_DIR = Path(__file__).resolve().parent
MARKER = "cross_tenant"

# route name (or, for an unnamed route, its full pattern) → why it needs no cross-tenant test
EXEMPT_ROUTES: dict[str, str] = {
    "healthz": "operator liveness probe without auth: answers that the process runs, reads nothing",
    "readyz": "operator probe without auth: database/migrations/worker/queue/LLM status, no tenant rows",
    "readyz-worker": "operator probe without auth: the same service-wide body as readyz, no tenant rows",
    "metrics": "operator endpoint (allowed networks or METRICS_TOKEN): service-wide counters and gauges, no org ids",
    "api-index": "the public front door of /api/v1/: links to the docs, the schema and the resources, reads nothing",
    "api-schema": "the public OpenAPI document, the same for everybody",
    "api-docs": "the public Swagger UI page for the schema, the same for everybody",
    "^api/": "the catch-all under /api/: a JSON 404 for every unknown path, reads nothing",
    # OAuth 2.1 (docs/oauth.md): the authorization endpoint, the token endpoint and connected apps have
    # cross-tenant tests (tests/accounts/oauth/test_oauth.py); these hold no org data
    "oauth2_provider:oauth-server-metadata": "RFC 8414 authorization server metadata, the same public document for all",
    "oauth2_provider:oauth-resource-metadata-mcp": "RFC 9728 metadata of /mcp, the same public document for all",
    "oauth2_provider:oauth-resource-metadata-api": "RFC 9728 metadata of /api/v1, the same public document for all",
    "oauth2_provider:revoke-token": "RFC 7009: a client revokes a token issued to itself; reads no org rows",
    "oauth2_provider:dcr-register": "RFC 7591: registers a new OAuth client; clients belong to no org",
    "oauth2_provider:dcr-register-management": "RFC 7592: a client reads/updates its own registration (its token)",
    "oauth2_provider:oauth-not-found": "the catch-all under /oauth/: a JSON 404 for every unknown path, reads nothing",
    "oauth2_provider:well-known-not-found": "the catch-all under /.well-known/: a JSON 404 for every unknown path, "
    "reads nothing",
    # allauth.socialaccount (single sign-on, accounts/sso/): its redirects from the old paths of its pages
    "accounts/social/login/cancelled/": "allauth's permanent redirect to its renamed page, reads nothing",
    "accounts/social/login/error/": "allauth's permanent redirect to its renamed page, reads nothing",
    "accounts/social/signup/": "allauth's permanent redirect to its renamed page, reads nothing",
    "accounts/social/connections/": "allauth's permanent redirect to its renamed page, reads nothing",
}
# URL namespaces whose routes are not ours to guard with the tenant filter
EXEMPT_NAMESPACES: dict[str, str] = {
    "admin": "Django admin: staff-only moderation across every org, for the service's operators, not tenants",
}
# third-party view packages mounted in the URL conf
EXEMPT_VIEW_PACKAGES: dict[str, str] = {
    "allauth": "sign-in, sign-up and password pages of the signed-in user's own account, no org data",
}


# --- what exists --------------------------------------------------------------------------------------


def _walk(resolver: URLResolver, prefix: str = "", namespaces: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(key, view module) of every route; key is ``namespace:name``, the name, or the full pattern."""
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = (*namespaces, entry.namespace) if entry.namespace else namespaces
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "view_class", entry.callback)
            if entry.name:
                key = ":".join((*namespaces, entry.name))
            else:
                key = ":".join((*namespaces, prefix + str(entry.pattern)))
            yield key, getattr(view, "__module__", "") or ""


@cache
def routes_to_guard() -> set[str]:
    """Every route of the URL conf but the exempt third-party families."""
    keys = set()
    for key, module in _walk(get_resolver()):
        if key.split(":", 1)[0] in EXEMPT_NAMESPACES and ":" in key:
            continue
        if any(module == package or module.startswith(package + ".") for package in EXEMPT_VIEW_PACKAGES):
            continue
        keys.add(key)
    return keys


@cache
def mcp_tool_names() -> set[str]:
    """Every tool of a freshly built MCP server (the same assembly ``/mcp`` serves), listed in-process."""
    from reasoningbank.mcp_server import build_mcp_server

    return {tool.name for tool in anyio.run(build_mcp_server().list_tools)}


# --- what the tests claim -------------------------------------------------------------------------------


def _is_cross_tenant_mark(node: ast.expr) -> bool:
    """``pytest.mark.cross_tenant`` or ``mark.cross_tenant`` (the attribute chain, not yet called)."""
    if not (isinstance(node, ast.Attribute) and node.attr == MARKER):
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
        isinstance(owner, ast.Name) and owner.id == "mark"
    )


def _marks_in(node: ast.expr) -> Iterator[ast.expr]:
    """The marker expressions of a decorator or of a ``pytestmark`` value (a mark or a list/tuple of marks)."""
    if isinstance(node, ast.List | ast.Tuple):
        for element in node.elts:
            yield from _marks_in(element)
    else:
        yield node


def cross_tenant_names(source: str, filename: str = "<source>") -> tuple[set[str], list[str]]:
    """The names covered by ``cross_tenant`` marks in ``source``, and a list of problems (a mark
    without names, or a name that is not a string literal: the scan cannot credit those)."""
    tree = ast.parse(source, filename=filename)
    names: set[str] = set()
    problems: list[str] = []
    marks: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                marks.extend(_marks_in(decorator))
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            marks.extend(_marks_in(node.value))
    for mark in marks:
        if _is_cross_tenant_mark(mark):
            problems.append(f"{filename}:{mark.lineno}: cross_tenant needs the route/tool names as arguments")
            continue
        if not (isinstance(mark, ast.Call) and _is_cross_tenant_mark(mark.func)):
            continue
        if not mark.args:
            problems.append(f"{filename}:{mark.lineno}: cross_tenant() names no route or tool")
        for arg in mark.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
            else:
                problems.append(f"{filename}:{mark.lineno}: cross_tenant arguments must be string literals")
    return names, problems


@cache
def covered_names() -> tuple[dict[str, set[str]], list[str]]:
    """name → the test files that cover it, and every problem found, for the whole ``tests/`` tree."""
    covered: dict[str, set[str]] = {}
    problems: list[str] = []
    for path in sorted(TESTS_DIR.rglob("*.py")):
        relative = str(path.relative_to(TESTS_DIR.parent))
        names, found = cross_tenant_names(path.read_text(encoding="utf-8"), relative)
        problems.extend(found)
        for name in names:
            covered.setdefault(name, set()).add(relative)
    return covered, problems


APP_ROOT = TESTS_DIR.parent
APPS = ("accounts", "memories", "consolidation", "webhooks", "reasoningbank")
ACCESS_HELPERS = {"access_filter", "access_get"}


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _ours(module: str) -> bool:
    return module.split(".", 1)[0] in APPS


def endpoint_module_names() -> set[str]:
    """The modules that serve the dashboard, REST and MCP, found by what they define rather than by
    their file names (a feature package's ``memories/ask/contracts.py`` is found as well as an app's
    top-level ``consolidation/contracts.py``): the module of every view the URL conf routes to (dashboard pages
    and DRF views), of every tool module's registrar the MCP server runs, and of every operation
    contract (a ``Contract`` subclass) once those are loaded."""
    from reasoningbank.contracts import Contract
    from reasoningbank.mcp_registry import tool_registrars

    modules = {module for _, module in _walk(get_resolver())}
    mcp_tool_names()  # builds the server: every tool module, and the contracts they serve, imported
    modules |= {registrar.__module__ for registrar in tool_registrars()}
    modules |= {cls.__module__ for cls in _subclasses(Contract)}
    return {module for module in modules if _ours(module)}


def endpoint_modules() -> list[Path]:
    return sorted(Path(str(importlib.import_module(name).__file__)) for name in endpoint_module_names())


def app_modules_defining_contracts() -> set[str]:
    """Independently of the URL conf and the MCP server: import every module of the apps (not their
    migrations) and name those that define an operation contract."""
    from reasoningbank.contracts import Contract

    for app in APPS[:-1]:  # the apps; the kernel defines the base, and its composition builds servers
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{app}."):
            if ".migrations" not in info.name:
                importlib.import_module(info.name)
    return {cls.__module__ for cls in _subclasses(Contract) if _ours(cls.__module__)}


def default_manager_uses(source: str) -> list[int]:
    """Lines where ``<Model>.objects`` / ``<Model>._default_manager`` is used other than as the first
    argument of ``access_filter``/``access_get`` (which add the tenant filter)."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in ACCESS_HELPERS:
                allowed.update(id(inner) for inner in ast.walk(node.args[0]))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("objects", "_default_manager")
        and isinstance(node.value, ast.Name)
        and node.value.id[:1].isupper()
        and id(node) not in allowed
    )


def missing(guarded: set[str], covered: set[str]) -> list[str]:
    return sorted(guarded - covered - set(EXEMPT_ROUTES))


# --- the wall ---------------------------------------------------------------------------------------------


def test_every_route_and_tool_has_a_cross_tenant_test() -> None:
    covered, problems = covered_names()
    routes, tools = routes_to_guard(), mcp_tool_names()
    assert routes and tools  # the walk found something to guard
    assert not problems, "unreadable cross_tenant marks:\n" + "\n".join(problems)

    lacking = [f"route {name}" for name in missing(routes, set(covered))]
    lacking += [f"MCP tool {name}" for name in missing(tools, set(covered))]

    assert not lacking, (
        "these endpoints have no cross-tenant test: mark a test in which another org's data is a 404 / an "
        'error result / absent with @pytest.mark.cross_tenant("<name>"), or, for a route without tenant data, '
        "add it to EXEMPT_ROUTES with the reason:\n  " + "\n  ".join(lacking)
    )


def test_every_cross_tenant_mark_names_a_real_route_or_tool() -> None:
    covered, _ = covered_names()
    known = routes_to_guard() | mcp_tool_names()
    unknown = {name: sorted(files) for name, files in covered.items() if name not in known}
    assert not unknown, f"cross_tenant marks naming no route or MCP tool (a typo or a removed endpoint): {unknown}"


def test_no_exempt_route_is_also_claimed_or_gone() -> None:
    covered, _ = covered_names()
    guarded = routes_to_guard()
    assert set(EXEMPT_ROUTES) <= guarded, f"exempt routes that no longer exist: {set(EXEMPT_ROUTES) - guarded}"
    assert not set(EXEMPT_ROUTES) & set(covered), "a route is both exempt and covered: drop the exemption"


def test_every_module_defining_a_contract_is_checked_whatever_its_file_name() -> None:
    """A glob of ``contracts.py`` skipped ``contracts_ask.py``, ``contracts_code.py`` and
    ``contracts_context.py``: the modules checked are found by what they define."""
    defining = app_modules_defining_contracts()
    assert defining, "no module defining a Contract found"
    assert defining <= endpoint_module_names(), f"not checked: {sorted(defining - endpoint_module_names())}"


def test_every_routed_view_and_tool_module_is_checked() -> None:
    names = endpoint_module_names()
    assert {module for _, module in _walk(get_resolver()) if _ours(module)} <= names
    assert {"memories.mcp_tools", "consolidation.mcp_tools"} <= names


def test_no_view_api_or_tool_module_reads_through_a_default_manager() -> None:
    """Reads go through selectors that take the principal (or ``access_filter``/``access_get``); a bare
    ``Model.objects`` in an endpoint module is a read that can forget the tenant filter."""
    offenders = [
        f"{path.relative_to(APP_ROOT)}:{line}"
        for path in endpoint_modules()
        for line in default_manager_uses(path.read_text(encoding="utf-8"))
    ]
    assert endpoint_modules(), "no endpoint module found to check"
    assert not offenders, "use a selector taking the principal or access_filter(Model, principal): " + ", ".join(
        offenders
    )


# --- the scanner cannot pass vacuously ---------------------------------------------------------------------

UNMARKED = """
import pytest

def test_another_orgs_memory_is_a_404(client):
    assert client.get("/memories/mem_x/").status_code == 404

@pytest.mark.django_db
def test_listing(client):
    pass
"""

MARKED = """
import pytest
from pytest import mark

pytestmark = [pytest.mark.django_db, pytest.mark.cross_tenant("api-memories")]

@pytest.mark.parametrize("mode", ["a", "b"])
@pytest.mark.cross_tenant("memory-detail", "memory-edit")
def test_a(mode):
    pass

@mark.cross_tenant("memory_search")
async def test_b():
    pass

class TestSessions:
    @pytest.mark.cross_tenant("api-session")
    def test_c(self):
        pass
"""


def test_the_scanner_reports_an_endpoint_whose_only_test_is_unmarked() -> None:
    names, problems = cross_tenant_names(UNMARKED)
    assert names == set() and problems == []
    assert missing({"memory-detail", "healthz"}, names) == ["memory-detail"]


def test_the_scanner_finds_marks_on_functions_methods_and_in_pytestmark() -> None:
    names, problems = cross_tenant_names(MARKED)
    assert problems == []
    assert names == {"api-memories", "memory-detail", "memory-edit", "memory_search", "api-session"}
    assert missing({"memory-detail", "memory-list", "memory_search"}, names) == ["memory-list"]


def test_the_scanner_refuses_marks_it_cannot_read() -> None:
    source = (
        "import pytest\nNAME = 'api-memory'\n"
        "@pytest.mark.cross_tenant(NAME)\ndef test_a(): pass\n"
        "@pytest.mark.cross_tenant()\ndef test_b(): pass\n"
        "@pytest.mark.cross_tenant\ndef test_c(): pass\n"
    )
    names, problems = cross_tenant_names(source)
    assert names == set()
    assert len(problems) == 3


def test_the_default_manager_check_spots_a_bare_read_but_not_one_through_the_access_layer() -> None:
    source = (
        "def view(request, pk):\n"
        "    a = access_get(Membership.objects.select_related('user'), request.principal, pk=pk)\n"
        "    b = access_filter(Memory, request.principal).filter(pk=pk)\n"
        "    return Memory.objects.filter(pk=pk)\n"
    )
    assert default_manager_uses(source) == [4]


def test_the_route_walk_sees_dashboard_rest_and_catch_all_routes_but_not_admin_or_allauth() -> None:
    routes = routes_to_guard()
    assert {"memory-detail", "api-memory", "settings-token-revoke", "consolidation-run", "^api/"} <= routes
    assert not any(route.startswith("admin:") for route in routes)
    assert "account_login" not in routes


def test_the_tool_list_is_the_servers() -> None:
    assert {"memory_search", "memory_record", "session_submit", "memory_consolidate"} <= mcp_tool_names()
