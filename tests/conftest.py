"""The fixed cast: org A (acme) has alice (owner) and bob (viewer); org B (globex) has charlie.

Tokens are created through the real service, so tests exercise the real digest lookup.

Nothing here imports the project or the test libraries at module level: a pure test (no database) does
not pay for them at start-up (docs/contributing.md#running-the-tests). The test database is kept
between runs and built anew when its migrations are not the ones on disk (tests/schema_fingerprint.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rest_framework.test import APIClient

    from accounts.access import Principal
    from accounts.models import Organization, Project


@dataclass
class Cast:
    org_a: Organization
    org_b: Organization
    alice: Any
    bob: Any
    charlie: Any
    project_a: Project
    project_b: Project

    def principal(self, user: Any) -> Principal:
        from accounts.access import principal_for_membership
        from accounts.models import Membership

        return principal_for_membership(Membership.objects.select_related("organization", "user").get(user=user))


@pytest.fixture(scope="session", autouse=True)
def whitenoise_scans_once() -> None:
    """The static files listed once per process, not once per test client (tests/static_scan.py)."""
    from tests.static_scan import whitenoise_scan_once_install

    whitenoise_scan_once_install()


@pytest.fixture(autouse=True)
def hashing_embedder(settings: Any) -> None:
    """Tests embed with ``hashing`` (deterministic, no model to load); the default ``minilm-onnx`` is
    tested in tests/reasoningbank/test_embedder_minilm_onnx.py (``minilm`` in test_embedder_minilm.py)
    and by the end-to-end suite, whose service runs with the product's defaults."""
    settings.EMBEDDER = "hashing"
    settings.SEARCH_MIN_SIMILARITY = 0.1  # hashing's default (minilm-onnx's and minilm's is 0.2)
    # BM25 from exact counts: autovacuum may analyse the test tables at any moment, and the planner
    # statistics would then change rankings mid-run (tests/memories/search/test_search.py tests that path)
    settings.SEARCH_TERM_STATISTICS = "exact"
    # consolidation's thresholds default per embedder (calibrated, docs/consolidation.md#thresholds); the
    # tests build vectors with exact cosines around those of an uncalibrated embedder (0.95 / 0.8 / 0.7)
    settings.CONSOLIDATION_DUPLICATE_THRESHOLD = 0.95
    settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD = 0.8
    settings.CONSOLIDATION_JUDGE_MIN_SIMILARITY = 0.7
    settings.CONSOLIDATION_LADDER_SIMILARITY = 0.85  # the ladder's "similar", between cluster and duplicate


@pytest.fixture
def cast(db: Any) -> Cast:
    return cast_create()


def cast_create() -> Cast:
    """The cast in whichever database the test uses (the ``cast`` fixture's, or another server's)."""
    from accounts.models import Membership
    from tests.factories import MembershipFactory, OrganizationFactory, ProjectFactory, UserFactory

    org_a = OrganizationFactory(slug="acme", name="Acme", plan="pro")
    org_b = OrganizationFactory(slug="globex", name="Globex", plan="pro")
    alice = UserFactory(email="alice@acme.test")
    bob = UserFactory(email="bob@acme.test")
    charlie = UserFactory(email="charlie@globex.test")
    MembershipFactory(user=alice, organization=org_a, role=Membership.ROLE_OWNER)
    MembershipFactory(user=bob, organization=org_a, role=Membership.ROLE_VIEWER)
    MembershipFactory(user=charlie, organization=org_b, role=Membership.ROLE_OWNER)
    project_a = ProjectFactory(organization=org_a, slug="web-app")
    project_b = ProjectFactory(organization=org_b, slug="billing")
    return Cast(org_a, org_b, alice, bob, charlie, project_a, project_b)


@pytest.fixture
def make_token(db: Any):
    """make_token(org, scopes=None, projects=(), teams=()) -> (raw, principal)."""

    from accounts.access import principal_for_token
    from accounts.services import token_create

    def _make(org: Organization, *, scopes: list[str] | None = None, projects=(), teams=(), label: str = "test"):
        token, raw = token_create(organization=org, label=label, scopes=scopes, projects=projects, teams=teams)
        return raw, principal_for_token(token)

    return _make


@pytest.fixture
def agent(cast: Cast, make_token: Any) -> Principal:
    """An agent token of org A restricted to its project web-app (default scopes), as a Principal."""
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    return principal


@pytest.fixture
def api_client() -> APIClient:
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def token_client(make_token):
    """token_client(org, **token_kwargs) -> an APIClient sending that org's bearer token."""
    from rest_framework.test import APIClient

    def _client(org: Organization, **kwargs: Any) -> APIClient:
        raw, _ = make_token(org, **kwargs)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return _client


@pytest.fixture
async def app(transactional_db: Any) -> Any:
    """The composed ASGI app (Django + /mcp), started: a fresh MCP session manager per test, on the
    process's one MCP server (its tools are the same for every test). The tools' ORM work happens on
    other threads, hence a transactional database."""
    from reasoningbank.asgi import build_application
    from tests.mcp_harness import mcp_server_shared, running

    async with running(build_application(mcp_server_shared())) as started:
        yield started


@pytest.fixture
def anyio_backend() -> str:
    """anyio's pytest plugin (not pytest-asyncio) drives the async MCP tests, on asyncio."""
    return "asyncio"


@pytest.fixture
def long_running_process(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Health read afresh (no cached verdicts), an hour after this process "started" — past the
    worker's start-up grace — with no LLM configured."""
    from django.utils import timezone

    from system.selectors import health_cache_clear

    health_cache_clear()
    monkeypatch.setattr("system.selectors.process_booted_at", lambda: timezone.now() - timedelta(hours=1))
    settings.LLM_PROVIDER = "none"
    yield
    health_cache_clear()


@pytest.fixture(scope="session")
def django_db_createdb(
    request: pytest.FixtureRequest, django_db_modify_db_settings: None, django_db_blocker: Any
) -> bool:
    """Build the test database anew: asked for (``--create-db``), or a kept one (``--reuse-db``, the
    default) whose migrations are not the ones on disk: Django's keepdb would apply only the new ones by
    name, and the tests would run against a schema the code does not make. After the settings of this
    run's database (an xdist worker's has its own name). A database to build is cloned from the run's
    template when there is one of these migrations (tests/database_template.py): one build serves the
    workers and the serial process."""
    if not request.config.getvalue("reuse_db") and not request.config.getvalue("create_db"):
        return False  # built anew anyway, and dropped at the end
    from django.db import connection

    from tests.database_template import database_clone_or_lock
    from tests.schema_fingerprint import migration_dirs, migrations_fingerprint, reused_database_stale

    name = connection.settings_dict["TEST"]["NAME"]
    fingerprint = migrations_fingerprint(migration_dirs())
    rebuild = bool(request.config.getvalue("create_db"))
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        stale = reused_database_stale(cursor, name, fingerprint)
        cursor.execute("SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s", [name])
        absent = cursor.fetchone() is None
    if not (rebuild or stale or absent):
        return False
    if stale and not rebuild:
        sys.stderr.write(f"\n{name}: built from other migrations than those on disk, building it anew\n")
    with django_db_blocker.unblock():
        cloned = database_clone_or_lock(connection, name, fingerprint, rebuild=rebuild)
    return not cloned


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's set-up, then the database marked with the migrations it was built from (and, when
    this process built it, copied as the run's template); a transactional test's teardown emptying only
    the tables it wrote to (tests/transactional_reset.py)."""
    from django.db import connection

    from tests.database_template import template_from_database
    from tests.schema_fingerprint import database_fingerprint_store, migration_dirs, migrations_fingerprint
    from tests.transactional_reset import transactional_teardown_install

    transactional_teardown_install()

    fingerprint = migrations_fingerprint(migration_dirs())
    name = connection.settings_dict["NAME"]
    if name != connection.settings_dict["TEST"]["NAME"]:
        # pytest-django set up no database: none of the session's tests asks for one (a module whose
        # tests run on PostgreSQL servers of their own, run alone); the connection names the server's own
        yield
        return
    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            database_fingerprint_store(cursor, connection.ops.quote_name(name), fingerprint)
        template_from_database(connection, name, fingerprint)
    yield
