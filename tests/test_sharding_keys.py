"""The schema can be distributed by organization without a rewrite (docs/operations.md#distributed-by-organization).

Citus-style distribution (``create_distributed_table(table, 'organization_id')`` with every tenant
table co-located) needs three things of the schema, and these tests check them on the models and on
the live catalog (``pg_class``, ``pg_index``, ``pg_constraint``) of the migrated test database:

1. every tenant table has a NOT NULL ``organization_id`` (the distribution column);
2. every unique constraint or unique index of a tenant table includes it (a shard can only enforce
   uniqueness among its own rows); primary keys stay the single id column Django needs on one
   PostgreSQL, and the move swaps each for ``(id…, organization_id)``, which a test below performs;
3. every foreign key between two tenant tables includes it on both sides, paired with itself
   (a shard can only check a reference to a row on the same shard), and no global table refers to
   a tenant table (a reference table, replicated to every node, cannot point into one shard).

Every table in the catalog is either a tenant table or listed below as global with its reason, so a
new table (a model, a many-to-many, a third-party app's) must be classified before this passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, models, transaction

from accounts.models import ApiToken, Organization
from memories.models import MemorySignal
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db

ORG_COLUMN = "organization_id"

# Global tables: in a distributed database, reference tables (a copy on every node) or tables kept on the
# coordinator. Each one is either not about one organization or is the organization itself.
GLOBAL_TABLES = {
    "accounts_organization": "the tenants themselves: a few thousand rows read on every request, slug "
    "unique across the service; the reference table every tenant row's organization_id points to",
    "rb_throttle": "failed-authentication counters keyed by client address or hashed login, counted "
    "before any organization is known",
    "rb_cache": "the shared Django cache (allauth's rate limits): keys, not tenant data",
    "reasoningbank_workerheartbeat": "one row per worker cluster: describes the service",
    "reasoningbank_llmprice": "what the operator pays a provider per model: one price list for all",
    "django_migrations": "the schema's own history",
    "django_content_type": "Django's catalog of models",
    "django_session": "a browser login, keyed by session key; a user may belong to several organizations",
    "django_admin_log": "the operator's admin actions across organizations",
    "django_site": "the one site of django.contrib.sites (allauth)",
    "accounts_ssodomain": "which organization owns an e-mail domain, looked up at sign-in before any "
    "organization is known; a domain is verified by one organization across the service",
    "accounts_ssoconnection": "an organization's identity provider, found by its allauth SocialApp (a global "
    "row) when the provider answers a sign-in, before any organization is known; one row per organization",
}
GLOBAL_TABLE_PREFIXES = {
    "auth_": "users, groups and permissions: a user may belong to several organizations (Membership is "
    "the tenant row that ties one to an organization)",
    "account_": "allauth's e-mail addresses and confirmations, per user",
    "socialaccount_": "allauth's social logins, per user",
    "mfa_": "allauth's second factors (authenticator apps, passkeys, recovery codes), per user: one person's "
    "factors serve every organization they belong to",
    "oauth2_provider_": "django-oauth-toolkit's clients, grants and tokens, per user and client; the "
    "organization a grant or token acts in is on its tenant link row (OAuthGrantLink, OAuthTokenLink)",
    "django_q_": "the task queue and schedules of the workers: one queue for all organizations",
}

# A foreign key between tenant models that has no database constraint at all, with the reason: a
# composite one would be wanted if the column were constrained.
FIELDS_WITHOUT_DATABASE_FK = {
    ("consolidation_neighbouredge", "project_id"): "a cache of the pgvector index written tens of "
    "thousands of rows at a time; no constraint triggers (the ORM cascades a deleted project)",
}


def global_reason(table: str) -> str | None:
    if table in GLOBAL_TABLES:
        return GLOBAL_TABLES[table]
    return next((why for prefix, why in GLOBAL_TABLE_PREFIXES.items() if table.startswith(prefix)), None)


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]
    validated: bool


def catalog_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]


def tenant_tables() -> list[str]:
    return [table for table in catalog_tables() if global_reason(table) is None]


def columns_not_null(table: str) -> dict[str, bool]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
            "AND NOT attisdropped",
            [table],
        )
        return dict(cursor.fetchall())


def unique_indexes(table: str) -> list[tuple[str, bool, list[str]]]:
    """(index name, is it the primary key, its key columns; an expression counts as no column)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ic.relname, i.indisprimary, "
            "ARRAY(SELECT a.attname FROM unnest(i.indkey[0:i.indnkeyatts - 1]) WITH ORDINALITY AS k(attnum, n) "
            "      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) "
            "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass AND i.indisunique ORDER BY 1",
            [table],
        )
        return [(name, primary, list(cols)) for name, primary, cols in cursor.fetchall()]


def foreign_keys() -> list[ForeignKey]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT con.conname, src.relname, dst.relname, con.convalidated, "
            "ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, n) "
            "      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.n), "
            "ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, n) "
            "      JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.n) "
            "FROM pg_constraint con JOIN pg_class src ON src.oid = con.conrelid "
            "JOIN pg_class dst ON dst.oid = con.confrelid JOIN pg_namespace n ON n.oid = src.relnamespace "
            "WHERE con.contype = 'f' AND n.nspname = current_schema() ORDER BY 2, 1"
        )
        return [
            ForeignKey(name, table, tuple(cols), target, tuple(target_cols), validated)
            for name, table, target, validated, cols, target_cols in cursor.fetchall()
        ]


def is_composite_with_organization(fk: ForeignKey) -> bool:
    """The key pairs organization_id with organization_id and something else with something else."""
    pairs = list(zip(fk.columns, fk.target_columns, strict=True))
    return (ORG_COLUMN, ORG_COLUMN) in pairs and len(pairs) >= 2


def test_every_table_is_a_tenant_table_or_a_global_one_with_its_reason() -> None:
    tables = catalog_tables()
    # the check would pass vacuously on an empty catalog
    assert {"memories_memory", "accounts_organization", "django_q_task"} <= set(tables)
    assert len(tenant_tables()) >= 25


def test_every_tenant_table_carries_a_not_null_organization_id() -> None:
    missing = []
    for table in tenant_tables():
        not_null = columns_not_null(table)
        if not not_null.get(ORG_COLUMN, False):
            missing.append(f"{table}: {'nullable' if ORG_COLUMN in not_null else 'no'} {ORG_COLUMN}")
    assert not missing, "tenant tables without a NOT NULL organization_id:\n" + "\n".join(missing)


def test_every_tenant_model_has_a_required_organization_field() -> None:
    missing = []
    for model in apps.get_models(include_auto_created=True):
        table = model._meta.db_table
        if global_reason(table) is not None or model._meta.proxy or not model._meta.managed:
            continue
        field = next((f for f in model._meta.concrete_fields if f.column == ORG_COLUMN), None)
        if field is None or field.null or getattr(field.remote_field, "model", None) is not Organization:
            missing.append(f"{model._meta.label} ({table})")
    assert not missing, "tenant models without a required organization foreign key:\n" + "\n".join(missing)


def test_every_unique_constraint_of_a_tenant_table_includes_the_organization() -> None:
    lacking = [
        f"{table}.{name} ({', '.join(cols) or 'an expression'})"
        for table in tenant_tables()
        for name, primary, cols in unique_indexes(table)
        if not primary and ORG_COLUMN not in cols
    ]
    assert not lacking, "unique keys of tenant tables without organization_id:\n" + "\n".join(lacking)


def test_every_foreign_key_between_tenant_tables_is_composite_with_the_organization() -> None:
    tenants = set(tenant_tables())
    wrong = []
    for fk in foreign_keys():
        if fk.table in tenants and fk.target in tenants and not is_composite_with_organization(fk):
            wrong.append(f"{fk.table}.{fk.name} ({', '.join(fk.columns)}) → {fk.target}")
        elif fk.table not in tenants and fk.target in tenants:
            wrong.append(f"{fk.table}.{fk.name}: a global table refers to the tenant table {fk.target}")
    assert not wrong, "foreign keys a distributed database would refuse:\n" + "\n".join(wrong)


def test_every_composite_foreign_key_is_validated() -> None:
    # a NOT VALID key (added without locking, validated later) checks new rows only
    assert not [fk.name for fk in foreign_keys() if not fk.validated]


def test_every_reference_between_tenant_models_is_checked_by_a_composite_key() -> None:
    """The model walk catches what the catalog cannot: a relation with no constraint at all."""
    tenants = set(tenant_tables())
    composite = {(fk.table, fk.columns[0]) for fk in foreign_keys() if is_composite_with_organization(fk)}
    composite |= {(fk.table, fk.columns[1]) for fk in foreign_keys() if is_composite_with_organization(fk)}
    unchecked = []
    for model in apps.get_models(include_auto_created=True):
        table = model._meta.db_table
        if table not in tenants:
            continue
        for field in model._meta.concrete_fields:
            target = getattr(field.remote_field, "model", None)
            if not isinstance(field, models.ForeignKey) or target is None:
                continue
            if target._meta.db_table not in tenants or field.column == ORG_COLUMN:
                continue
            if (table, field.column) not in composite and (table, field.column) not in FIELDS_WITHOUT_DATABASE_FK:
                unchecked.append(f"{model._meta.label}.{field.name} → {target._meta.label}")
    assert not unchecked, "references between tenant models with no composite key:\n" + "\n".join(unchecked)


def test_the_primary_keys_can_become_organization_keys_as_the_move_needs() -> None:
    """What the move does first, done here inside the test's transaction: each tenant table's primary
    key becomes (its columns, organization_id). It fails if a single-column foreign key still leans on
    the old primary key; afterwards every unique key of every tenant table includes the organization."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table in tenant_tables():
            for name, primary, cols in unique_indexes(table):
                if primary and ORG_COLUMN not in cols:
                    with transaction.atomic():
                        cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
                        keys = ", ".join(f'"{col}"' for col in [*cols, ORG_COLUMN])
                        cursor.execute(f'ALTER TABLE "{table}" ADD PRIMARY KEY ({keys})')
    lacking = [
        f"{table}.{name}"
        for table in tenant_tables()
        for name, _primary, cols in unique_indexes(table)
        if ORG_COLUMN not in cols
    ]
    assert not lacking


def _insert_refused(make: Any) -> bool:
    try:
        with transaction.atomic():
            make()
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    except IntegrityError:
        return True
    return False


def test_the_database_refuses_a_signal_filed_in_another_organization_than_its_memory(cast: Any) -> None:
    memory = MemoryFactory(principal=cast.principal(cast.alice))

    def signal_in(org: Organization) -> Any:
        return lambda: MemorySignal.objects.create(organization=org, memory=memory, type="explicit", positive=True)

    assert _insert_refused(signal_in(cast.org_b))
    assert not _insert_refused(signal_in(cast.org_a))


def test_the_database_refuses_a_token_restricted_to_another_organizations_project(cast: Any) -> None:
    token = ApiToken.objects.create(organization=cast.org_a, label="ci", prefix="rb_x", digest="d" * 64)

    assert _insert_refused(lambda: token.projects.add(cast.project_b, through_defaults={"organization": cast.org_a}))
    assert not _insert_refused(
        lambda: token.projects.add(cast.project_a, through_defaults={"organization": cast.org_a})
    )
