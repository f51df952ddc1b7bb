"""The flattened 2020-12 metaschema accepts and rejects exactly what jsonschema's own does."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_presets.metaschema import schema_problem

KEYWORDS = [
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalProperties",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minItems",
    "maxLength",
    "pattern",
    "format",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$defs",
    "$ref",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "contentSchema",
    "definitions",
    "dependencies",
    "title",
    "description",
    "default",
    "propertyNames",
    "if",
    "then",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["object", "string", "integer", "array", "objec", "#/$defs/a", "^a+$", "x"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*KEYWORDS, "a", "b"]), inner, max_size=3),
    ),
    max_leaves=12,
)
schemas = st.dictionaries(st.sampled_from(KEYWORDS), values, max_size=4)


def official(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(schemas)
def test_flat_metaschema_agrees_with_the_official_check(schema: dict[str, Any]) -> None:
    assert (schema_problem(schema) is None) == official(schema)


def test_a_problem_names_what_is_wrong() -> None:
    problem = schema_problem({"type": "object", "properties": {"a": {"type": "strin"}}})
    assert problem is not None and "strin" in problem


def test_schemas_with_their_own_dynamic_anchor_use_the_official_check() -> None:
    schema = {"$dynamicAnchor": "node", "type": "object", "minProperties": -1}
    assert schema_problem(schema) is not None
    assert schema_problem({"$dynamicAnchor": "node", "type": "object"}) is None
