"""Keys that keep every tenant row inside its organization, so that the schema can be distributed by
organization without a rewrite (docs/operations.md#distributed-by-organization).

Django 5.2 has no composite foreign keys. A reference between two tenant tables therefore stays a
Django ``ForeignKey`` for the ORM, with ``db_constraint=False``, and the database checks it with
``SameOrganization``: ``FOREIGN KEY (x_id, organization_id) REFERENCES x (id, organization_id)``. The
referenced table carries ``UNIQUE (id, organization_id)``. PostgreSQL then refuses a row whose
organization differs from its parent's, whatever code path wrote it; and a distributed database
(Citus) accepts the key as it is, because it includes the distribution column on both sides.

The two migration operations build these keys without holding a write lock for the length of a
table scan; they only work in a migration declared ``atomic = False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations import AddConstraint
from django.db.migrations.state import ProjectState
from django.db.models.constraints import BaseConstraint

ORGANIZATION_COLUMN = "organization_id"


class SameOrganization(BaseConstraint):
    """The row's ``field`` refers to a row of the same organization (a composite foreign key)."""

    def __init__(self, *, field: str, name: str) -> None:
        super().__init__(name=name)
        self.field = field

    def _reference(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor) -> str:
        field = model._meta.get_field(self.field)
        assert isinstance(field, models.ForeignKey), f"{self.name}: {self.field} is not a foreign key"
        target = field.remote_field.model
        quote = schema_editor.quote_name
        org = quote(ORGANIZATION_COLUMN)
        # deferred like Django's own foreign keys: the ORM may write a parent after its child in one transaction
        return (
            f"FOREIGN KEY ({quote(field.column)}, {org}) "
            f"REFERENCES {quote(target._meta.db_table)} ({quote(field.target_field.column)}, {org}) "
            "DEFERRABLE INITIALLY DEFERRED"
        )

    def constraint_sql(self, model: type[models.Model] | None, schema_editor: BaseDatabaseSchemaEditor | None) -> str:
        assert model is not None and schema_editor is not None
        return f"CONSTRAINT {schema_editor.quote_name(self.name)} {self._reference(model, schema_editor)}"

    def create_sql(self, model: type[models.Model] | None, schema_editor: BaseDatabaseSchemaEditor | None) -> str:
        assert model is not None and schema_editor is not None
        table = schema_editor.quote_name(model._meta.db_table)
        return f"ALTER TABLE {table} ADD {self.constraint_sql(model, schema_editor)}"

    def remove_sql(self, model: type[models.Model] | None, schema_editor: BaseDatabaseSchemaEditor | None) -> str:
        assert model is not None and schema_editor is not None
        quote = schema_editor.quote_name
        return f"ALTER TABLE {quote(model._meta.db_table)} DROP CONSTRAINT {quote(self.name)}"

    def validate(
        self, model: type[models.Model], instance: models.Model, exclude: Any = None, using: Any = None
    ) -> None:
        """Nothing to check in Python: the database refuses the row (forms never choose the organization)."""

    def deconstruct(self) -> tuple[str, Sequence[Any], dict[str, Any]]:
        path, args, kwargs = super().deconstruct()
        kwargs["field"] = self.field
        return path, args, kwargs

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SameOrganization):
            return self.name == other.name and self.field == other.field
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self.name, self.field))


class _AddWithoutLock(AddConstraint):
    """An ``AddConstraint`` built in steps that each commit on their own (``add``), so that no step holds
    a write lock for the length of a table scan."""

    model_name: str  # set by AddConstraint (the stubs do not declare them)
    constraint: BaseConstraint

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.in_atomic_block:
            raise ValueError(
                f"{type(self).__name__} needs a migration with atomic = False (each step commits on its own)"
            )
        self.add(model, schema_editor)

    def add(self, model: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:  # a historical model
        raise NotImplementedError


class SameOrganizationAddWithoutLock(_AddWithoutLock):
    """Adds a ``SameOrganization`` key as NOT VALID (a moment's lock), then validates it in a second
    statement, which scans the table while reads and writes go on (SHARE UPDATE EXCLUSIVE)."""

    def add(self, model: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:  # a historical model
        quote = schema_editor.quote_name
        schema_editor.execute(self.constraint.create_sql(model, schema_editor) + " NOT VALID")
        schema_editor.execute(
            f"ALTER TABLE {quote(model._meta.db_table)} VALIDATE CONSTRAINT {quote(self.constraint.name)}"
        )


class UniqueAddWithoutLock(_AddWithoutLock):
    """Adds an unconditional ``UniqueConstraint`` by building its index CONCURRENTLY (reads and writes go
    on), then turning the index into the constraint (a moment's lock)."""

    def add(self, model: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:  # a historical model
        constraint = self.constraint
        assert isinstance(constraint, models.UniqueConstraint) and constraint.fields and constraint.condition is None
        quote = schema_editor.quote_name
        table, name = quote(model._meta.db_table), quote(constraint.name)
        columns = ", ".join(quote(model._meta.get_field(field).column) for field in constraint.fields)
        schema_editor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON {table} ({columns})")
        schema_editor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE USING INDEX {name}")
