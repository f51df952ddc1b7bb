"""The preset rules: the published JSON Schema, and the one way to word what it rejects.

Every preset rule lives in the schema (``schemas/preset.schema.json``, shipped
in the package). ``Preset`` construction, ``Preset.from_dict`` and the file
loader all validate through this module, so they accept exactly the same
mappings and word each problem the same way. It sits below ``model`` and
``loader`` and imports neither; ``jsonschema`` is imported only when a
mapping is actually validated, so ``import agent_presets`` stays cheap.
"""

from __future__ import annotations

import copy
import json
import reprlib
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.schemacheck import Check, compile_check

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

SCHEMA_NAME: Final = "preset.schema.json"

PathKey = tuple[str | int, ...]


def schema_text() -> str:
    """The preset-file JSON Schema exactly as shipped (what ``presets schema`` prints)."""
    try:
        # The package's own folder, read directly: every import pays for this file,
        # and importlib.resources' first use costs more than the read.
        return Path(__file__).parent.with_name("schemas").joinpath(SCHEMA_NAME).read_text("utf-8")
    except OSError:  # installed where files are not plain files (a zip)
        return (files("agent_presets") / "schemas" / SCHEMA_NAME).read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    """The preset-file JSON Schema shipped in the package (a fresh copy each call)."""
    return copy.deepcopy(_schema())


@cache
def _schema() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(schema_text())
    return value


@cache
def _file_validator() -> Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema())


@cache
def _preset_validator() -> Validator:
    import jsonschema

    s = _schema()
    return jsonschema.Draft202012Validator({"$defs": s["$defs"], "$ref": "#/$defs/preset"})


def file_errors(data: Any, limit: int | None = None) -> list[ValidationError]:
    """Schema errors of a whole preset file, in document order; at most ``limit`` of them.

    Each preset is checked on its own, and jsonschema (slow, and slower per
    error) sees only the presets the fast check is not certain of, so a file of
    thousands of broken presets costs ``limit`` errors' work, not all of them.
    """
    if _file_check()(data):
        return []
    items = data.get("presets") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return _sorted_errors(_file_validator(), data)[:limit]
    errors = _sorted_errors(_file_validator(), {**data, "presets": []})
    certain = _preset_check()
    for index, item in enumerate(items):
        if limit is not None and len(errors) >= limit:
            break
        if certain(item):
            continue
        for error in _sorted_errors(_preset_validator(), item):
            error.path.extendleft((index, "presets"))  # as if found in the whole file
            errors.append(error)
    return errors[:limit]


def preset_problems(mapping: Any) -> list[str]:
    """Every rule one preset mapping breaks, as messages (empty when valid)."""
    if _preset_check()(mapping):
        return []
    return [describe(e, mapping) for e in _sorted_errors(_preset_validator(), mapping)]


def _sorted_errors(validator: Validator, data: Any) -> list[ValidationError]:
    return sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])


# ---------------------------------------------------------------- the fast path


@cache
def _file_check() -> Check:
    return compile_check(_schema(), _schema())


@cache
def _preset_check() -> Check:
    return compile_check(_schema(), _schema()["$defs"]["preset"])


# ---------------------------------------------------------------- messages


QUOTE_LIMIT: Final = 60
"""How many characters of a value a message quotes; the rest is cut and counted."""

_short = reprlib.Repr()
_short.maxstring = _short.maxother = QUOTE_LIMIT
_short.maxlevel, _short.maxlist, _short.maxdict = 3, 6, 4


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """The ``repr`` of a value for a message, cut to a short prefix.

    Every message that quotes a value from a preset file or a plugin goes
    through here, so a 100 MB string costs one line of the report, not 100 MB.
    """
    if isinstance(value, str | bytes) and len(value) > limit:
        text = repr(value[:limit])
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{text[:-1]}…{text[-1]} ({len(value):,} {unit})"
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        text = repr(value)
    else:
        # reprlib bounds the work too: the full repr of a large container is never built.
        text = _short.repr(value)
    return clip(text, limit)


def clip(text: str, limit: int = 200) -> str:
    """A message written by someone else (an exception, a parser) cut to ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "…"


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def extra_key(error: ValidationError) -> str | None:
    """The unknown field an ``additionalProperties`` error is about, if any."""
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = set(_schema_of(error).get("properties", {}))
        extras = [k for k in error.instance if k not in allowed]
        if extras:
            return str(extras[0])
    return None


def problem_path(error: ValidationError) -> PathKey:
    """Where a problem points: at the field, or at the preset for a preset-wide rule."""
    path = tuple(error.absolute_path)
    if _is_never_active(error):
        return path[:-1]
    return path


def _is_never_active(error: ValidationError) -> bool:
    return error.validator == "minItems" and tuple(error.absolute_path)[-1:] == ("contexts",)


def field_label(path: Iterable[str | int]) -> str:
    """``presets[0].contexts[1]``-style label of a path inside a preset file."""
    parts = list(path)
    label = ""
    if len(parts) >= 2 and parts[0] == "presets" and isinstance(parts[1], int):
        label = f"presets[{parts[1]}]"
        parts = parts[2:]
    for p in parts:
        label += f"[{p}]" if isinstance(p, int) else (f".{p}" if label else str(p))
    return label or "file"


def preset_label(data: Any, path: PathKey) -> tuple[str, PathKey]:
    """('preset 'name'', remaining path) for an error inside a preset of a file."""
    if len(path) >= 2 and path[0] == "presets" and isinstance(path[1], int):
        try:
            name = data["presets"][path[1]].get("name")
        except (AttributeError, IndexError, KeyError, TypeError):
            name = None
        label = f"preset {quote(name)}" if isinstance(name, str) else f"presets[{path[1]}]"
        return label, path[2:]
    kind = (
        _MEMBER_KINDS.get(path[0])
        if len(path) >= 2 and isinstance(path[0], str) and isinstance(path[1], int)
        else None
    )
    if kind is not None:
        try:
            member_id = data[path[0]][path[1]].get("id")
        except (AttributeError, IndexError, KeyError, TypeError):
            member_id = None
        label = (
            f"{kind} {quote(member_id)}" if isinstance(member_id, str) else field_label(path[:2])
        )
        return label, path[2:]
    return "", path


_MEMBER_KINDS: Final = {
    "prompts": "prompt",
    "resources": "resource",
    "resource_templates": "resource template",
}
"""The file's lists of declarations besides ``presets``, and what one item is called."""


def describe(error: ValidationError, data: Any) -> str:
    """The one message for a schema error: what is wrong, where, and what to do."""
    path = tuple(error.absolute_path)
    label, rest = preset_label(data, path)
    if (
        not label
        and isinstance(data, Mapping)
        and "presets" not in path
        and isinstance(data.get("name"), str)
    ):
        label = f"preset {quote(data['name'])}"
    field = field_label(rest) if rest else ""
    where = ", ".join(x for x in (label, f"field {quote(field)}" if field else "") if x)
    prefix = f"{where}: " if where else ""
    v, inst = error.validator, error.instance
    member = _describe_member(error, prefix, label, rest)
    if member is not None:
        return member
    if v == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else error.message
        hint = " (a preset file holds a 'presets:' list)" if missing == "presets" else ""
        return f"{prefix}missing required field {quote(missing)}{hint}"
    if v == "additionalProperties":
        extra = extra_key(error)
        allowed = ", ".join(_schema_of(error).get("properties", {}))
        return f"{prefix}unknown field {quote(extra)}; allowed fields: {allowed}"
    if v == "enum":
        options = ", ".join(str(o) for o in _schema_of(error).get("enum", []))
        return f"{prefix}{quote(inst)} is not one of: {options}"
    if v == "const" and rest and rest[-1] == "default_state":
        return (
            f"{label} has risk {quote(_risk_of(data, path))} and must use default_state: off "
            "(dangerous presets are enabled only by an explicit override)"
        )
    if v == "type":
        return _describe_type(error, prefix, rest)
    if v == "pattern" and "propertyNames" in error.schema_path:
        return f"{prefix}field name {quote(inst)} must be snake_case, like activity or world_id"
    if v == "pattern" and rest and rest[-1] in ("name", "group"):
        return f"{prefix}{quote(inst)} must be kebab-case (lowercase letters, digits and '-')"
    if v == "pattern" and rest and rest[0] == "tool_ids":
        return f"{prefix}tool id {quote(inst)} must be dotted, like 'drawing.set-tool'"
    if _is_never_active(error):
        return (
            f"{label} is auto but lists no contexts, so it could never activate; "
            "add a pattern such as {surface: any} or use default_state: off"
        )
    if v == "minItems":
        return f"{prefix}must list at least {error.validator_value} item(s)"
    if v == "uniqueItems":
        return f"{prefix}lists the same item twice"
    if v == "minProperties":
        return (
            f"{prefix}an empty context pattern matches everything; write {{surface: any}} to say so"
        )
    if v == "propertyNames":
        return f"{prefix}field name {quote(inst)} must be snake_case"
    if v == "oneOf" and "command" in _schema_of(error).get("properties", {}):
        return (
            f"{prefix}an upstream is started by command: [program, args...] or reached at "
            "url: http://...; give exactly one of them"
        )
    return f"{prefix}{clip(error.message)}"


def _describe_member(error: ValidationError, prefix: str, label: str, rest: PathKey) -> str | None:
    """The messages of the rules that prompts, resources and their listing in presets add."""
    v = error.validator
    if v == "anyOf" and label.startswith("preset ") and not rest:
        return (
            f"{label} lists no tool_ids, prompts or resources, so it would serve nothing; "
            "list at least one of them"
        )
    if v in ("minProperties", "maxProperties") and "messages" in rest:
        return f"{prefix}a message has a role and exactly one of text, image or resource"
    if v in ("minProperties", "maxProperties") and rest[-1:] == ("resource",):
        return f"{prefix}an embedded resource has a uri and its text or its blob (one of them)"
    if v is None and tuple(error.schema_path)[-2:] == ("then", "properties"):
        return f"{prefix}gives both text and blob; keep one"
    if v == "pattern" and rest[-1:] == ("mime_type",):
        return f"{prefix}{quote(error.instance)} is not a MIME type like text/plain or image/png"
    if v == "pattern" and rest[-1:] in (("uri",), ("uri_template",)):
        return f"{prefix}{quote(error.instance)} is not a URI; write a scheme, like notes://today"
    if v == "pattern" and rest[-1:] in (("data",), ("blob",)):
        return f"{prefix}is not base64 text; encode the bytes as base64"
    if v == "pattern" and (rest[-1:] == ("id",) or rest[:1] in (("prompts",), ("resources",))):
        return f"{prefix}id {quote(error.instance)} must be dotted, like 'units.explain-unit'"
    return None


def _describe_type(error: ValidationError, prefix: str, rest: PathKey) -> str:
    inst = error.instance
    expected = error.validator_value
    expected = " or ".join(expected) if isinstance(expected, list) else expected
    if rest in (("contexts",), ("tool_ids",)):
        return f"{prefix}{rest[0]} must be a list, not {type(inst).__name__}"
    if len(rest) == 2 and rest[0] == "contexts":
        return f"{prefix}a context pattern must be a mapping of fields, not {type(inst).__name__}"
    message = f"{prefix}expected {expected}, got {_json_type(inst)} {quote(inst)}"
    if len(rest) == 3 and rest[0] == "contexts" and isinstance(inst, list | Mapping):
        message += "; a context field must be a string, number, boolean or null"
    return message


def _risk_of(data: Any, path: PathKey) -> str:
    try:
        node = data
        for p in path[:-1]:
            node = node[p]
        risk = node.get("risk")
    except (KeyError, IndexError, TypeError, AttributeError):
        return "dangerous"
    # The schema raised this error only because the risk is a dangerous one.
    return risk if isinstance(risk, str) else "dangerous"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__
