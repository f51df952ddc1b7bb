"""A fast check that a tool's input schema is a valid JSON Schema (draft 2020-12).

The official 2020-12 metaschema is split into vocabularies joined by
``$dynamicRef``, and resolving those references dominates
``Draft202012Validator.check_schema`` (about a millisecond per schema). This
module flattens the same vocabularies, from the copies jsonschema ships, into
one schema whose recursion is a plain ``$ref: "#"``: the same rules for any
schema that does not declare its own ``$dynamicAnchor``, checked several times
faster. A schema that does declare one is checked the official way.

``jsonschema`` is imported by the first check, so importing this module (and
``agent_presets.adapters`` above it) stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

DIALECT = "https://json-schema.org/draft/2020-12/schema"
VOCABULARIES = (
    "core",
    "applicator",
    "unevaluated",
    "validation",
    "meta-data",
    "format-annotation",
    "content",
)


def _rewrite(node: Any, vocabulary: str) -> Any:
    if isinstance(node, list):
        return [_rewrite(item, vocabulary) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$dynamicRef" and value == "#meta":
            out["$ref"] = "#"
        elif key == "$ref" and isinstance(value, str):
            target, _, pointer = value.partition("#")
            owner = target.rsplit("/", 1)[-1] if target else vocabulary
            name = pointer.removeprefix("/$defs/")
            out["$ref"] = f"#/$defs/{owner}.{name}"
        elif key in ("$schema", "$id", "$vocabulary", "$dynamicAnchor", "$comment"):
            continue
        else:
            out[key] = _rewrite(value, vocabulary)
    return out


@cache
def flat_metaschema() -> dict[str, Any]:
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    top = REGISTRY.contents(DIALECT)
    for vocabulary in VOCABULARIES:
        part = REGISTRY.contents(f"https://json-schema.org/draft/2020-12/meta/{vocabulary}")
        properties.update(_rewrite(part.get("properties", {}), vocabulary))
        for name, schema in part.get("$defs", {}).items():
            defs[f"{vocabulary}.{name}"] = _rewrite(schema, vocabulary)
    properties.update(_rewrite(top.get("properties", {}), "schema"))
    return {"type": ["object", "boolean"], "properties": properties, "$defs": defs}


@cache
def _validator() -> Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(flat_metaschema())


def schema_problem(schema: Mapping[str, Any] | bool) -> str | None:
    """Why ``schema`` is not a valid 2020-12 JSON Schema, or None when it is."""
    import jsonschema
    from jsonschema.exceptions import best_match

    if isinstance(schema, Mapping) and (
        "$dynamicAnchor" in str(schema) or schema.get("$schema", DIALECT) != DIALECT
    ):
        try:
            jsonschema.validators.validator_for(schema).check_schema(dict(schema))
        except jsonschema.SchemaError as exc:
            return str(exc.message)
        return None
    plain = dict(schema) if isinstance(schema, Mapping) else schema
    error = best_match(_validator().iter_errors(plain))
    return None if error is None else str(error.message)
