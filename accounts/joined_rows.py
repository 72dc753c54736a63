"""Several models read in one written-out statement: the column list of each model under an alias, and
the instances built back from the row. For the lookups every request starts with (an API token, an OAuth
access token), where the ORM's query building cost more CPU than the statement itself
(bench/README.md, where the CPU of one MCP search goes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Model


def model_columns(model: type[Model], alias: str) -> str:
    """``alias.col1, alias.col2, …`` for every concrete field of ``model``, in ``models_from_row``'s order."""
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


def models_from_row(row: Sequence[Any], models: Sequence[type[Model]]) -> tuple[list[Any], int]:
    """The instances of ``models`` whose columns (``model_columns``) open ``row``, in order (None for a
    model whose primary key is NULL: an outer join that found nothing), and the index of the first
    column after them."""
    loaded: list[Any] = []
    start = 0
    for model in models:
        fields = model._meta.concrete_fields
        values = list(row[start : start + len(fields)])
        start += len(fields)
        if values[fields.index(model._meta.pk)] is None:
            loaded.append(None)
            continue
        for i, field in enumerate(fields):
            # what the ORM would do to the value: a JSONField's text parsed, for one (psycopg hands it raw)
            column = field.get_col(model._meta.db_table)
            for converter in column.get_db_converters(connection):
                values[i] = converter(values[i], column, connection)
        loaded.append(model.from_db(connection.alias, [f.attname for f in fields], values))
    return loaded, start
