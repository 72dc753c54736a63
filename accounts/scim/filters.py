"""A SCIM ``filter`` (RFC 7644 section 3.4.2.2) as a Django ``Q``: scim2-models parses and checks the
expression against the resource's schema, this visitor maps the attributes we store to columns. An
attribute we do not store, or an operator we cannot answer, is a SCIM 400 ``invalidFilter``, never a
silent match-all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q
from scim2_models import Group, InvalidFilterException, ScimFilter, User
from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterVisitor,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)

# operator → the lookup on a text column; SCIM compares these attributes case-insensitively (caseExact false)
TEXT_LOOKUPS = {
    CompareOperator.eq: "iexact",
    CompareOperator.ne: "iexact",  # negated below
    CompareOperator.co: "icontains",
    CompareOperator.sw: "istartswith",
    CompareOperator.ew: "iendswith",
}


def _text(column: str) -> Callable[[CompareOperator | None, Any], Q]:
    def build(op: CompareOperator | None, value: Any) -> Q:
        if op is None:  # pr: present and not empty
            return Q(**{f"{column}__isnull": False}) & ~Q(**{column: ""})
        if op not in TEXT_LOOKUPS or not isinstance(value, str):
            raise InvalidFilterException(detail=f"'{op}' with {value!r} is not supported on this attribute")
        q = Q(**{f"{column}__{TEXT_LOOKUPS[op]}": value})
        return ~q if op == CompareOperator.ne else q

    return build


def _id(column: str) -> Callable[[CompareOperator | None, Any], Q]:
    def build(op: CompareOperator | None, value: Any) -> Q:
        if op is None:
            return Q()
        if op not in (CompareOperator.eq, CompareOperator.ne):
            raise InvalidFilterException(detail="ids are compared with 'eq' or 'ne' only")
        try:
            q = Q(**{column: int(str(value))})
        except ValueError:
            q = Q(pk__in=[])  # an id that is no number of ours matches nothing
        return ~q if op == CompareOperator.ne else q

    return build


def _active(op: CompareOperator | None, value: Any) -> Q:
    if op is None:
        return Q()
    if op not in (CompareOperator.eq, CompareOperator.ne) or not isinstance(value, bool):
        raise InvalidFilterException(detail="active is compared with 'eq' or 'ne' to true or false")
    wanted = value if op == CompareOperator.eq else not value
    return Q(deactivated_at__isnull=wanted)


# the stored attributes of each resource, by lower-cased "attr" or "attr.subAttr"
USER_ATTRIBUTES: dict[str, Callable[[CompareOperator | None, Any], Q]] = {
    "id": _id("pk"),
    "username": _text("user__email"),
    "emails": _text("user__email"),
    "emails.value": _text("user__email"),
    "externalid": _text("scim_external_id"),
    "name.givenname": _text("user__first_name"),
    "name.familyname": _text("user__last_name"),
    "active": _active,
}
GROUP_ATTRIBUTES: dict[str, Callable[[CompareOperator | None, Any], Q]] = {
    "id": _id("pk"),
    "displayname": _text("name"),
    "members": _id("members__membership_id"),
    "members.value": _id("members__membership_id"),
}


class _ToQ(FilterVisitor[Q]):
    def __init__(self, attributes: dict[str, Callable[[CompareOperator | None, Any], Q]]) -> None:
        self.attributes = attributes

    def _column(self, path: AttrPath, sub_attr: str | None = None) -> Callable[[CompareOperator | None, Any], Q]:
        name = path.attr.lower()
        sub = sub_attr or path.sub_attr
        key = f"{name}.{sub.lower()}" if sub else name
        if key not in self.attributes:
            raise InvalidFilterException(detail=f"filtering on {key!r} is not supported here")
        return self.attributes[key]

    def visit_comparison(self, node: Comparison) -> Q:
        return self._column(node.attr_path)(node.op, node.value)

    def visit_present(self, node: Present) -> Q:
        return self._column(node.attr_path)(None, None)

    def visit_not(self, node: Not) -> Q:
        return ~self.visit(node.expr)

    def visit_logical_expr(self, node: LogicalExpr) -> Q:
        terms = [self.visit(term) for term in node.terms]
        combined = terms[0]
        for term in terms[1:]:
            combined = combined & term if node.op == LogicalOperator.and_ else combined | term
        return combined

    def visit_value_path(self, node: ValuePath) -> Q:
        # emails[value eq "x"], members[value eq "12"]: the inner comparison names the sub-attribute
        inner = node.val_filter
        if isinstance(inner, Comparison) and inner.attr_path.sub_attr is None:
            return self._column(node.attr_path, inner.attr_path.attr)(inner.op, inner.value)
        raise InvalidFilterException(detail="only one comparison is supported inside [...]")


def scim_filter_q(expression: str, resource: type[User] | type[Group]) -> Q:
    """The ``Q`` of a filter on Users or Groups; ``InvalidFilterException`` when it cannot be answered."""
    try:
        # the syntax only: the attributes are ours to map (below), and the values are compared as given — a
        # typed check would refuse ``emails.value eq "x@host.test"`` for an address pydantic deems reserved
        parsed: ScimFilter[Any] = ScimFilter(expression)
    except InvalidFilterException:
        raise
    except (ValueError, TypeError) as exc:
        raise InvalidFilterException(detail=f"the filter could not be parsed: {exc}") from None
    return _ToQ(USER_ATTRIBUTES if resource is User else GROUP_ATTRIBUTES).visit(parsed.ast)
