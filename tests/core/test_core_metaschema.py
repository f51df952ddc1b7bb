"""The flattened 2020-12 metaschema accepts and rejects exactly what jsonschema's own does."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import nested

from agent_presets.lib.metaschema import build_flat_metaschema, flat_metaschema, schema_problem
from agent_presets.lib.schemacheck import compile_check

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
    "$id",
    "$schema",
    "$comment",
    "$anchor",
    "$vocabulary",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["object", "string", "integer", "array", "objec", "#/$defs/a", "^a+$", "x"]),
)
values = nested(scalars, [*KEYWORDS, "a", "b"])
schemas = st.dictionaries(st.sampled_from(KEYWORDS), values, max_size=4)


def official(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


@pytest.mark.slow
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


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$id": []}, "[] is not of type 'string'"),
        ({"type": "object", "$schema": 3}, "3 is not of type 'string'"),
        ({"$comment": 3}, "3 is not of type 'string'"),
        ({"$vocabulary": 2}, "2 is not of type 'object'"),
    ],
)
def test_the_core_keywords_are_checked_too_without_a_crash(
    schema: dict[str, Any], problem: str
) -> None:
    # The flattening once dropped the rules for $id, $schema, $comment and the like,
    # so these were called valid (or, for a $schema that is no string, crashed).
    assert not official(schema)
    assert schema_problem(schema) == problem


def test_the_shipped_flat_metaschema_is_the_one_built_from_jsonschemas_vocabularies() -> None:
    assert flat_metaschema() == build_flat_metaschema()


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(schemas)
def test_the_fast_reading_calls_valid_only_what_jsonschema_accepts(schema: dict[str, Any]) -> None:
    flat = flat_metaschema()
    if compile_check(flat, flat)(schema):
        assert official(schema)


def test_the_usual_tool_schemas_are_read_without_jsonschema() -> None:
    flat = flat_metaschema()
    certainly_valid = compile_check(flat, flat)
    assert certainly_valid(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1},
                "size": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "mode": {"enum": ["a", "b"], "description": "how"},
            },
            "required": ["name"],
            "additionalProperties": False,
        }
    )
    assert not certainly_valid({"type": "object", "properties": {"a": {"pattern": "("}}})
    assert not certainly_valid({"type": "object", "properties": {"a": {"type": "strin"}}})
