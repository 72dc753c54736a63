"""One contract per agent operation (docs/decisions.md#one-contract-per-operation): its input type
(validation, defaults) and its output shape, shared by the MCP tool, the REST view and the OpenAPI
schema so that they cannot drift.

* ``Contract`` — the base of every input and output model: unknown fields are refused, strings are
  trimmed, and inputs are strict JSON (``"5"`` is not an integer, ``1`` is not a boolean).
* ``contract_parse`` — a REST body → the input model, or a 400 in the API's one error shape naming
  every field at fault, worded like the MCP answer (``reasoningbank/mcp_errors.py``).
* ``unknown_name_problem`` — the one sentence for a name the operation does not know, with the
  nearest known name (``difflib``): REST's 400 and every MCP tool (``reasoningbank/mcp_server.py``
  checks the arguments of every registered tool) say it the same way.
* ``contract_tool`` — registers an MCP tool whose parameters are the input model's fields (the SDK
  reads a tool's signature; the names, descriptions, defaults and limits come from the model), and
  whose structured output is the output model.
* ``ContractSchema`` — drf-spectacular renders the same models in ``/api/schema/`` (request bodies
  in pydantic's validation mode, responses in serialization mode with every always-present key
  required).

Imports no app: the apps' ``contracts.py`` modules build on it.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rest_framework import exceptions

from reasoningbank.mcp_errors import argument_problem, arguments_error_text
from reasoningbank.text_safety import text_neutralise

if TYPE_CHECKING:
    from mcp.types import ToolAnnotations

C = TypeVar("C", bound="Contract")

# what every string of an input holds (NUL cannot be stored by PostgreSQL) — declared in the schema
NUL_FREE = "^[^\\u0000]*$"
# a required text, which is trimmed before it is checked: at least one character that is not whitespace,
# declared so that a schema-valid value of spaces alone is never refused as empty
NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


class Contract(BaseModel):
    """Base of the operations' input and output models."""

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)


# --- unknown names ---------------------------------------------------------------------------------

NAME_SHOWN_MAX = 60  # characters of an unknown name repeated back (it is the caller's text)
NEAREST_CUTOFF = 0.6  # difflib's similarity floor for "did you mean": confidance → min_confidence, not content


def name_shown(name: str) -> str:
    """An unknown name as an answer repeats it: without control characters, at most
    ``NAME_SHOWN_MAX`` characters."""
    name = text_neutralise(str(name))
    return name if len(name) <= NAME_SHOWN_MAX else name[: NAME_SHOWN_MAX - 1] + "…"


def nearest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` most likely misspells (``difflib``), or None when none is close."""
    matches = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=NEAREST_CUTOFF)
    return matches[0] if matches else None


def unknown_name_problem(name: str, known: Iterable[str], *, noun: str = "argument") -> str:
    """``unknown argument 'confidance' (did you mean 'min_confidence'?)``: ``argument`` of an MCP tool,
    ``field`` of a REST body, ``query parameter`` of a REST query."""
    guess = nearest_name(name, known)
    return f"unknown {noun} '{name_shown(name)}'" + (f" (did you mean '{guess}'?)" if guess else "")


def unknown_name_errors(
    names: Iterable[str], known: Collection[str], *, noun: str = "argument"
) -> list[dict[str, Any]]:
    """One error item per unknown name, shaped like pydantic's (``arguments_error_text`` and
    ``contract_errors`` render them), each naming the nearest known name."""
    return [
        {"type": "unknown_name", "loc": (name_shown(name),), "msg": unknown_name_problem(name, known, noun=noun)}
        for name in names
    ]


def _known_names(model: type[BaseModel] | None, where: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model found at ``where`` inside ``model``."""
    for part in where:
        if model is None:
            return []
        if isinstance(part, int):
            continue  # an item of a list field: the same model
        info = model.model_fields.get(str(part))
        inner = (
            [t for t in _types_in(info.annotation) if isinstance(t, type) and issubclass(t, BaseModel)] if info else []
        )
        model = inner[0] if inner else None
    return list(model.model_fields) if model is not None else []


def errors_name_nearest(
    errors: Iterable[Mapping[str, Any]],
    model: type[BaseModel] | None,
    *,
    noun: str,
    hidden: Collection[str] = (),
) -> list[Mapping[str, Any]]:
    """Pydantic's error items with every ``extra_forbidden`` one replaced by ``unknown_name_errors``'
    (the nearest of ``model``'s names, leaving out ``hidden`` ones)."""
    out: list[Mapping[str, Any]] = []
    for item in errors:
        loc = tuple(item.get("loc", ()))
        if item.get("type") == "extra_forbidden" and loc:
            known = [name for name in _known_names(model, loc[:-1]) if name not in hidden]
            (unknown,) = unknown_name_errors([str(loc[-1])], known, noun=noun)
            item = {**unknown, "loc": (*loc[:-1], *unknown["loc"])}
        out.append(item)
    return out


# --- REST ------------------------------------------------------------------------------------------


def _field_name(loc: tuple[Any, ...]) -> str:
    return str(loc[0]) if loc else "non_field_errors"


def contract_errors(
    error: ValidationError, model: type[BaseModel] | None = None, *, hidden: Collection[str] = ()
) -> dict[str, list[str]]:
    """Pydantic's errors as ``{field: [sentence, ...]}`` in the MCP wording; an unknown field names
    the nearest of ``model``'s fields (but ``hidden`` ones)."""
    errors: dict[str, list[str]] = {}
    for item in errors_name_nearest(error.errors(include_url=False), model, noun="field", hidden=hidden):
        loc = tuple(item.get("loc", ()))
        message = argument_problem(item, tool_call=False)
        sentence = message[:1].upper() + message[1:] + "."
        if len(loc) > 1:  # inside a list or object: say where, as the serializers did ("item 1: …")
            where = ".".join(f"item {part}" if isinstance(part, int) else str(part) for part in loc[1:])
            sentence = f"{where}: {sentence}"
        bucket = errors.setdefault(_field_name(loc), [])
        if sentence not in bucket:
            bucket.append(sentence)
    return errors


def contract_parse(model: type[C], data: Any, **path: Any) -> C:
    """Validate a REST body (plus values from the URL path) into ``model``; a 400 naming every
    field otherwise (``reasoningbank/api_errors.py`` renders it)."""
    if not isinstance(data, dict):
        raise exceptions.ValidationError(
            {"non_field_errors": [f"The request body must be a JSON object, not {type(data).__name__}."]}
        )
    clashing = sorted(set(data) & set(path))
    if clashing:  # a path value is never taken from the body
        raise exceptions.ValidationError({name: ["Unknown field: it is part of the URL."] for name in clashing})
    try:
        return model.model_validate({**data, **path})
    except ValidationError as exc:
        # a field the URL gives is no suggestion for a misspelt body field
        raise exceptions.ValidationError(contract_errors(exc, model, hidden=set(path))) from None


def contract_query_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The OpenAPI schema of a query parameter that ``model``'s field ``name`` parses: the contract's own
    limits (length, pattern), so that a schema-valid value is never refused; without the ``null`` an optional
    field also takes (a query parameter is left out instead), its title and its default."""
    field = model.model_json_schema()["properties"][name]
    (value,) = [option for option in field.get("anyOf", [field]) if option.get("type") != "null"]
    return {key: part for key, part in value.items() if key not in ("title", "default", "description")}


def contract_tool(
    server: Any,
    *,
    name: str,
    description: str,
    annotations: ToolAnnotations,
    input_model: type[C],
    output_model: type[BaseModel],
    run: Callable[[C], BaseModel],
) -> None:
    """Register tool ``name`` on ``server``: its parameters are ``input_model``'s fields; a call
    validates them into the model (the SDK has already checked types and limits) and returns
    ``run(model)``."""
    # the MCP SDK (and the web server stack it brings) only where tools are registered: the REST views
    # and the OpenAPI schema import this module too, and with them every command that loads the URLs
    from mcp.server.mcpserver.exceptions import ToolError

    parameters = []
    for field_name, info in input_model.model_fields.items():
        # the type with its limits, description and deprecation; the default goes on the parameter. A
        # deprecation is written into the schema only: the SDK reads every argument back off its own model,
        # and a pydantic deprecation would warn on each call of a tool that never uses the value.
        extra: dict[str, Any] | None = {"deprecated": True} if info.deprecated else None
        described = Field(description=info.description, json_schema_extra=extra)
        annotation: Any = Annotated[(info.annotation, *info.metadata, described)]  # type: ignore[name-defined]
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        parameters.append(
            inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )

    def tool(**arguments: Any) -> BaseModel:
        try:  # the SDK checked each argument; rules across arguments are the model's
            args = input_model.model_validate(arguments, strict=False)
        except ValidationError as exc:
            raise ToolError(arguments_error_text(name, exc.errors(include_url=False))) from None
        return run(args)

    tool.__name__ = name
    tool.__doc__ = description
    tool.__signature__ = inspect.Signature(parameters, return_annotation=output_model)  # type: ignore[attr-defined]
    server.tool(name=name, description=description, annotations=annotations)(tool)


class ContractSchema(OpenApiSerializerExtension):
    """``Contract`` models in the OpenAPI schema, as pydantic describes them."""

    target_class = Contract
    match_subclasses = True
    priority = 1  # above drf-spectacular's own pydantic extension (serialization mode for requests too)

    def get_name(self, auto_schema: Any, direction: str) -> str:
        # RecordInput → "RecordRequest" (drf-spectacular appends "Request"), RecordOutput → "RecordResponse"
        name = str(self.target.__name__)
        if direction == "request":
            return name.removesuffix("Input").removesuffix("Body")
        return name.removesuffix("Output") + "Response" if name.endswith("Output") else name

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        mode = "validation" if direction == "request" else "serialization"
        schema = self.target.model_json_schema(ref_template="#/components/schemas/{model}", mode=mode)
        for sub_name, sub_schema in schema.pop("$defs", {}).items():
            sub_model = _model_named(self.target, sub_name)
            if mode == "serialization":
                _require_present_keys(sub_schema, sub_model)
            # the model class as the component's identity, as when it is an operation's own body
            auto_schema.registry.register_on_missing(
                ResolvedComponent(
                    name=sub_name, type=ResolvedComponent.SCHEMA, object=sub_model or sub_name, schema=sub_schema
                )
            )
        if mode == "serialization":
            _require_present_keys(schema, self.target)
        return schema


def _model_named(root: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The nested model class called ``name`` inside ``root``'s fields (for its optional keys)."""
    seen: set[type[BaseModel]] = set()
    stack: list[type[BaseModel]] = [root]
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        if model.__name__ == name:
            return model
        for info in model.model_fields.values():
            for arg in _types_in(info.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    stack.append(arg)
    return None


def _types_in(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [t for arg in args for t in _types_in(arg)]


def _require_present_keys(schema: dict[str, Any], model: type[BaseModel] | None) -> None:
    """A response always holds every key except those excluded when empty (``exclude_if``): say so."""
    if model is None or "properties" not in schema:
        return
    optional = {name for name, info in model.model_fields.items() if info.exclude_if is not None}
    schema["required"] = [name for name in schema["properties"] if name not in optional]
