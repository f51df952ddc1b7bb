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
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

SCHEMA_NAME: Final = "preset.schema.json"

PathKey = tuple[str | int, ...]


def schema_text() -> str:
    """The preset-file JSON Schema exactly as shipped (what ``presets schema`` prints)."""
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


def file_errors(data: Any) -> list[ValidationError]:
    """Schema errors of a whole preset file, in document order."""
    if _file_check()(data):
        return []
    return _sorted_errors(_file_validator(), data)


def preset_problems(mapping: Any) -> list[str]:
    """Every rule one preset mapping breaks, as messages (empty when valid)."""
    if _preset_check()(mapping):
        return []
    return [describe(e, mapping) for e in _sorted_errors(_preset_validator(), mapping)]


def _sorted_errors(validator: Validator, data: Any) -> list[ValidationError]:
    return sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])


# ---------------------------------------------------------------- the fast path

Check = Callable[[Any], bool]

# Keywords that describe and never constrain.
_ANNOTATIONS: Final = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description"})


@cache
def _file_check() -> Check:
    return _Compiler(_schema()).compile(_schema())


@cache
def _preset_check() -> Check:
    return _Compiler(_schema()).compile(_schema()["$defs"]["preset"])


def _never(instance: Any) -> bool:
    return False


def _always(instance: Any) -> bool:
    return True


class _Compiler:
    """Reads the schema into plain Python checks that say only "certainly valid" or not.

    Most definitions are valid, and presets are built often (every load, every
    test), so a valid one is recognised here in microseconds, without
    importing jsonschema. The rules are still the schema's: this reads the same
    document, and only the keywords the preset schema uses. A keyword it does
    not know makes it answer "not certain", and every such answer goes to
    jsonschema, which has the last word and writes the messages.
    """

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, node: Any) -> Check:
        if node is True:
            return _always
        if not isinstance(node, dict):
            return _never
        checks: list[Check] = []
        for key, value in node.items():
            if key in _ANNOTATIONS or key in ("then", "else"):
                continue
            make = getattr(self, "k_" + key.replace("$", "dollar_"), None)
            if make is None:
                return _never  # a keyword this reader does not know: let jsonschema decide
            checks.append(make(value, node))
        return _all(checks)

    def k_type(self, expected: Any, node: Any) -> Check:
        names = expected if isinstance(expected, list) else [expected]
        return _any([_TYPES.get(n, _never) for n in names])

    def k_enum(self, options: Any, node: Any) -> Check:
        if all(type(o) is str for o in options):
            strings = frozenset(options)
            return lambda instance: type(instance) is str and instance in strings
        return lambda instance: any(_json_equal(o, instance) for o in options)

    def k_const(self, value: Any, node: Any) -> Check:
        return lambda instance: _json_equal(value, instance)

    def k_pattern(self, regex: str, node: Any) -> Check:
        search = re.compile(regex).search
        return lambda instance: not isinstance(instance, str) or search(instance) is not None

    def k_required(self, names: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, dict) or all(n in instance for n in names)

    def k_properties(self, props: Any, node: Any) -> Check:
        checks = {k: self.compile(v) for k, v in props.items()}

        def check(instance: Any) -> bool:
            if not isinstance(instance, dict):
                return True
            for k, v in instance.items():
                check = checks.get(k)
                if check is not None and not check(v):
                    return False
            return True

        return check

    def k_additionalProperties(self, extra: Any, node: Any) -> Check:
        if "patternProperties" in node:
            return _never
        known = set(node.get("properties", {}))
        inner = self.compile(extra) if extra is not False else _never

        def check(instance: Any) -> bool:
            if not isinstance(instance, dict):
                return True
            for k, v in instance.items():  # noqa: SIM110 (a loop is faster than all())
                if k not in known and not inner(v):
                    return False
            return True

        return check

    def k_propertyNames(self, names: Any, node: Any) -> Check:
        inner = self.compile(names)
        return lambda instance: not isinstance(instance, dict) or all(map(inner, instance))

    def k_items(self, items: Any, node: Any) -> Check:
        if "prefixItems" in node:
            return _never
        inner = self.compile(items)
        return lambda instance: not isinstance(instance, list) or all(map(inner, instance))

    def k_minItems(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, list) or len(instance) >= n

    def k_minProperties(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, dict) or len(instance) >= n

    def k_uniqueItems(self, flag: Any, node: Any) -> Check:
        if not flag:
            return _always

        def check(instance: Any) -> bool:
            if not isinstance(instance, list):
                return True
            return not any(
                _json_equal(a, b) for i, a in enumerate(instance) for b in instance[i + 1 :]
            )

        return check

    def k_anyOf(self, branches: Any, node: Any) -> Check:
        return _any([self.compile(b) for b in branches])

    def k_allOf(self, branches: Any, node: Any) -> Check:
        return _all([self.compile(b) for b in branches])

    def k_if(self, condition: Any, node: Any) -> Check:
        test = self.compile(condition)
        then = self.compile(node.get("then", True))
        otherwise = self.compile(node.get("else", True))
        return lambda instance: then(instance) if test(instance) else otherwise(instance)

    def k_dollar_ref(self, ref: Any, node: Any) -> Check:
        prefix = "#/$defs/"
        if not isinstance(ref, str) or not ref.startswith(prefix):
            return _never
        name = ref[len(prefix) :]
        if name not in self.root.get("$defs", {}):
            return _never
        if name not in self.refs:
            self.refs[name] = _never  # a definition that refers to itself: not certain
            self.refs[name] = self.compile(self.root["$defs"][name])
        return self.refs[name]


def _all(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]

    # Loops, not all()/any() over generators: these run for every preset built.
    def check(instance: Any) -> bool:
        for one in checks:  # noqa: SIM110
            if not one(instance):
                return False
        return True

    return check


def _any(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]

    def check(instance: Any) -> bool:
        for one in checks:  # noqa: SIM110
            if one(instance):
                return True
        return False

    return check


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans equal only booleans, 1 equals 1.0 (as jsonschema has it)."""
    if type(a) is str or type(b) is str:
        return type(a) is type(b) and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


_TYPES: Final[dict[str, Check]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    # "integer" is not used by the preset schema: not certain, so jsonschema decides.
}


# ---------------------------------------------------------------- messages


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
        label = f"preset {name!r}" if isinstance(name, str) else f"presets[{path[1]}]"
        return label, path[2:]
    return "", path


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
        label = f"preset {data['name']!r}"
    field = field_label(rest) if rest else ""
    where = ", ".join(x for x in (label, f"field {field!r}" if field else "") if x)
    prefix = f"{where}: " if where else ""
    v, inst = error.validator, error.instance
    if v == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else error.message
        hint = " (a preset file holds a 'presets:' list)" if missing == "presets" else ""
        return f"{prefix}missing required field {missing!r}{hint}"
    if v == "additionalProperties":
        extra = extra_key(error)
        allowed = ", ".join(_schema_of(error).get("properties", {}))
        return f"{prefix}unknown field {extra!r}; allowed fields: {allowed}"
    if v == "enum":
        options = ", ".join(str(o) for o in _schema_of(error).get("enum", []))
        return f"{prefix}{inst!r} is not one of: {options}"
    if v == "const" and rest and rest[-1] == "default_state":
        return (
            f"{label} has risk {_risk_of(data, path)!r} and must use default_state: off "
            "(dangerous presets are enabled only by an explicit override)"
        )
    if v == "type":
        return _describe_type(error, prefix, rest)
    if v == "pattern" and "propertyNames" in error.schema_path:
        return f"{prefix}field name {inst!r} must be snake_case, like activity or world_id"
    if v == "pattern" and rest and rest[-1] in ("name", "group"):
        return f"{prefix}{inst!r} must be kebab-case (lowercase letters, digits and '-')"
    if v == "pattern" and rest and rest[0] == "tool_ids":
        return f"{prefix}tool id {inst!r} must be dotted, like 'drawing.set-tool'"
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
    if v == "anyOf" and rest and rest[-1] == "canvas_visible":
        return f"{prefix}must be true, false or any, not {inst!r}"
    if v == "propertyNames":
        return f"{prefix}field name {inst!r} must be snake_case"
    return f"{prefix}{error.message}"


def _describe_type(error: ValidationError, prefix: str, rest: PathKey) -> str:
    inst = error.instance
    expected = error.validator_value
    expected = " or ".join(expected) if isinstance(expected, list) else expected
    if rest in (("contexts",), ("tool_ids",)):
        return f"{prefix}{rest[0]} must be a list, not {type(inst).__name__}"
    if len(rest) == 2 and rest[0] == "contexts":
        return f"{prefix}a context pattern must be a mapping of fields, not {type(inst).__name__}"
    message = f"{prefix}expected {expected}, got {_json_type(inst)} {inst!r}"
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
