"""A fast check that a tool's input schema is a valid JSON Schema (draft 2020-12).

The official 2020-12 metaschema is split into vocabularies joined by
``$dynamicRef``, and resolving those references dominates
``Draft202012Validator.check_schema`` (about a millisecond per schema). This
module flattens the same vocabularies, from the copies jsonschema ships, into
one schema whose recursion is a plain ``$ref: "#"``: the same rules for any
schema that does not declare its own ``$dynamicAnchor``, checked several times
faster. A schema that does declare one is checked the official way.

The flattened schema is shipped beside this module (``metaschema.flat.json``;
a test rebuilds it from jsonschema's copies with ``build_flat_metaschema``
and compares), so the usual case needs no jsonschema at all: a schema that
the fast reading of ``agent_presets.lib.schemacheck`` finds certainly valid is
valid, and only the others go to jsonschema, which has the last word and
writes the message. So ``presets serve`` starts without importing jsonschema
(about 90 ms, most of it its ``referencing`` dependency).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.schemacheck import Check, compile_check

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

DIALECT = "https://json-schema.org/draft/2020-12/schema"
FLAT_NAME: Final = "metaschema.flat.json"
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
        elif key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = _rewrite_properties(value, vocabulary)
        else:
            out[key] = _rewrite(value, vocabulary)
    return out


def _rewrite_properties(properties: Mapping[str, Any], vocabulary: str) -> dict[str, Any]:
    # The keys here are names, not keywords: "$id" is the rule for a schema's $id.
    return {name: _rewrite(schema, vocabulary) for name, schema in properties.items()}


@cache
def flat_metaschema() -> dict[str, Any]:
    """The flattened metaschema as shipped; one document shared, do not change it."""
    text = (files("agent_presets") / FLAT_NAME).read_text(encoding="utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


def build_flat_metaschema() -> dict[str, Any]:
    """The flattened metaschema built from the vocabularies jsonschema ships."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    top = REGISTRY.contents(DIALECT)
    for vocabulary in VOCABULARIES:
        part = REGISTRY.contents(f"https://json-schema.org/draft/2020-12/meta/{vocabulary}")
        properties.update(_rewrite_properties(part.get("properties", {}), vocabulary))
        for name, schema in part.get("$defs", {}).items():
            defs[f"{vocabulary}.{name}"] = _rewrite(schema, vocabulary)
    properties.update(_rewrite_properties(top.get("properties", {}), "schema"))
    return {"type": ["object", "boolean"], "properties": properties, "$defs": defs}


@cache
def _validator() -> Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(flat_metaschema())


@cache
def _certainly_valid() -> Check:
    flat = flat_metaschema()
    return compile_check(flat, flat)


def schema_problem(schema: Mapping[str, Any] | bool) -> str | None:
    """Why ``schema`` is not a valid 2020-12 JSON Schema, or None when it is."""
    declared = schema.get("$schema", DIALECT) if isinstance(schema, Mapping) else DIALECT
    if isinstance(schema, Mapping) and (
        "$dynamicAnchor" in str(schema) or (isinstance(declared, str) and declared != DIALECT)
    ):
        import jsonschema

        try:
            jsonschema.validators.validator_for(schema).check_schema(dict(schema))
        except jsonschema.SchemaError as exc:
            return str(exc.message)
        return None
    plain = dict(schema) if isinstance(schema, Mapping) else schema
    try:
        if _certainly_valid()(plain):
            return None
    except RecursionError:  # nested deeper than the fast reading goes: let jsonschema say
        pass
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(plain))
    return None if error is None else str(error.message)
