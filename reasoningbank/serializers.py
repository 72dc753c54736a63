"""Strict DRF input for every app's REST API: bad input is a 400 naming the field
(docs/agent-api.md#strict-arguments).

JSON bodies are strict: real JSON booleans and strings only (``StrictBooleanField``,
``StrictCharField``), and unknown fields are rejected so that a typo never silently does nothing; the
OpenAPI schema says so (``additionalProperties: false``, ``StrictSerializerSchema``). Query strings of
list endpoints are strict the same way (``StrictQuerySerializer``): an empty value or an unknown
parameter is a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from reasoningbank.contracts import NOT_BLANK, NUL_FREE, unknown_name_problem
from reasoningbank.pagination import Pagination


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


# --- strict JSON fields ------------------------------------------------------------------------


class StrictCharField(serializers.CharField):
    """A JSON string only (DRF's CharField would turn 5 into "5"). Like every DRF CharField it refuses
    NUL characters (PostgreSQL cannot store them), and the schema says so with ``NUL_FREE``;
    ``allow_nul=True`` lets them through to a service that removes them (session traces)."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, *, allow_nul: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if allow_nul:
            current: list[Any] = self.validators  # type: ignore[has-type]  # DRF's untyped property
            self.validators = [v for v in current if not isinstance(v, ProhibitNullCharactersValidator)]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean only (DRF's BooleanField would accept "yes", 1, "on")."""

    default_error_messages = {"invalid": "Must be a JSON boolean (true or false)."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictSerializer(serializers.Serializer):
    # JSON Schema keywords that document a rule across fields (``validate``), added to the request schema
    schema_extra: dict[str, Any] = {}
    # no docstring on purpose: a class docstring becomes the description of every subclass's schema
    # component; this one is a JSON-object body whose keys must all be known fields.

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"non_field_errors": [f"The request body must be a JSON object, not {type(data).__name__}."]}
            )
        unknown = sorted(str(key) for key in data if key not in self.fields)
        if unknown:
            allowed = ", ".join(self.fields) or "none"
            problems = {key: _capital(unknown_name_problem(key, self.fields, noun="field")) for key in unknown}
            raise serializers.ValidationError(
                {key: [f"{problem}. Allowed fields: {allowed}."] for key, problem in problems.items()}
            )
        return super().to_internal_value(data)


def _string_pattern(field: serializers.Field) -> str | None:
    """What DRF's CharField enforces beyond minLength/maxLength, declared in the schema so that a
    schema-valid string is never refused: no NUL character (PostgreSQL cannot store it), and, where
    blank is not allowed, at least one character that is not whitespace (values are trimmed)."""
    if not isinstance(field, serializers.CharField) or getattr(field, "regex", None):
        return None
    refuses_nul = any(isinstance(v, ProhibitNullCharactersValidator) for v in field.validators)
    if field.trim_whitespace and not field.allow_blank:
        return NOT_BLANK if refuses_nul else "\\S"
    return NUL_FREE if refuses_nul else None


def _declare_string_patterns(serializer: serializers.Serializer, schema: dict[str, Any]) -> None:
    """Give each string property (or list of strings) the ``pattern`` its field enforces."""
    properties = schema.get("properties", {})
    for name, field in serializer.fields.items():
        prop = properties.get(name)
        if isinstance(field, serializers.ListField) and prop is not None:
            field, prop = field.child, prop.get("items")
        if prop is None or prop.get("type") != "string" or "pattern" in prop:
            continue
        pattern = _string_pattern(field)
        if pattern:
            prop["pattern"] = pattern


class StrictSerializerSchema(OpenApiSerializerExtension):
    """Declares what ``StrictSerializer`` enforces: a request body may hold no other property, and
    its strings no NUL character (nor only whitespace where a value is required)."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
            _declare_string_patterns(self.target, schema)
            schema.update(getattr(self.target, "schema_extra", {}))
        return schema


# Query parameters every paginated list also takes (read by ``Pagination``, not by the serializer).
PAGE_PARAMETERS = (Pagination.page_query_param, Pagination.page_size_query_param)
EMPTY_VALUE = "Must not be empty: give a value or leave the parameter out."


class StrictQuerySerializer(serializers.Serializer):
    # no docstring on purpose (it would describe every subclass): the query string of a list
    # endpoint, where an empty value (``?tier=``) or an unknown parameter (``?tags=`` for ``?tag=``)
    # is a 400 naming it instead of silently listing everything.

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, list[str]] = {}
        for name in data:
            values = data.getlist(name) if hasattr(data, "getlist") else [data[name]]
            if name not in self.fields and name not in PAGE_PARAMETERS:
                known = [*self.fields, *PAGE_PARAMETERS]
                problem = unknown_name_problem(str(name), known, noun="query parameter")
                errors[str(name)] = [f"{_capital(problem)}. Allowed: {', '.join(known)}."]
            elif any(isinstance(value, str) and not value.strip() for value in values):
                errors[str(name)] = [EMPTY_VALUE]
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class StrictQuerySerializerSchema(OpenApiSerializerExtension):
    """Query parameters (``parameters=[…QuerySerializer]``): their strings hold no NUL character and
    not only whitespace."""

    target_class = StrictQuerySerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        _declare_string_patterns(self.target, schema)
        return schema


class EmptyQuerySerializer(StrictQuerySerializer):
    # a list that takes no filter: only page and page_size
    pass


class EmptyBodySerializer(StrictSerializer):
    # no fields: the body may be absent, empty or {}
    pass
