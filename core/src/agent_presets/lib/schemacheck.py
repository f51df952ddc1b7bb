"""A fast "certainly valid" reading of the preset schema, so valid presets skip jsonschema.

Most definitions are valid, and presets are built often (every load, every
test). ``compile_check`` turns the schema into plain Python checks that say
only "certainly valid" or "not certain"; ``agent_presets.lib.schema`` sends every
"not certain" to jsonschema, which has the last word and writes the messages.
The rules stay the schema's: this reads the same document, and knows only the
keywords the preset schema, the flattened JSON Schema metaschema and the
built-in tools' input schemas use (``agent_presets.lib.metaschema`` checks tools'
input schemas with it, and ``agent_presets.lib.adapters`` the arguments of a call).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

Check = Callable[[Any], bool]

# Keywords that describe and never constrain.
_ANNOTATIONS: Final = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "deprecated"}
)


def compile_check(root: Mapping[str, Any], node: Any) -> Check:
    """A check of ``node`` (a schema, or a part of ``root``) that is True only for valid values."""
    return _Compiler(root).compile(node)


def _never(instance: Any) -> bool:
    return False


def _always(instance: Any) -> bool:
    return True


class _Compiler:
    """One ``k_<keyword>`` method per keyword it knows; any other keyword reads as "not certain"."""

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

    def k_minimum(self, n: Any, node: Any) -> Check:
        # As jsonschema compares: NaN is not below anything.
        return lambda instance: not _is_number(instance) or not instance < n

    def k_exclusiveMinimum(self, n: Any, node: Any) -> Check:
        return lambda instance: not _is_number(instance) or not instance <= n

    def k_format(self, name: Any, node: Any) -> Check:
        if name != "regex":
            return _never  # a format this reader cannot check: not certain
        return lambda instance: not isinstance(instance, str) or _is_regex(instance)

    def k_maximum(self, n: Any, node: Any) -> Check:
        return lambda instance: not _is_number(instance) or not instance > n

    def k_exclusiveMaximum(self, n: Any, node: Any) -> Check:
        return lambda instance: not _is_number(instance) or not instance >= n

    def k_minLength(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, str) or len(instance) >= n

    def k_maxLength(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, str) or len(instance) <= n

    def k_minItems(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, list) or len(instance) >= n

    def k_maxItems(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, list) or len(instance) <= n

    def k_minProperties(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, dict) or len(instance) >= n

    def k_maxProperties(self, n: Any, node: Any) -> Check:
        return lambda instance: not isinstance(instance, dict) or len(instance) <= n

    def k_uniqueItems(self, flag: Any, node: Any) -> Check:
        if not flag:
            return _always

        def check(instance: Any) -> bool:
            if not isinstance(instance, list):
                return True
            # Scalars by a hashable JSON key: linear, so 100,000 tool ids take no time
            # (comparing every pair took hours). Containers and NaN keep the pairwise check.
            seen: set[tuple[str, Any]] = set()
            for item in instance:
                if isinstance(item, dict | list) or item != item:
                    return _pairwise_unique(instance)
                key = _json_key(item)
                if key in seen:
                    return False
                seen.add(key)
            return True

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
        if ref == "#":
            target = self.root
        elif isinstance(ref, str) and ref.startswith(prefix):
            name = ref[len(prefix) :]
            if any(c in name for c in "/~%"):
                return _never  # a longer pointer, or an escaped one: not read here
            target = self.root.get("$defs", {}).get(name)
            if target is None:
                return _never
        else:
            return _never
        if ref not in self.refs:
            # A schema that refers to itself (the metaschema does, through "#")
            # reaches its own check through this cell, filled once it is compiled.
            cell: list[Check] = []
            self.refs[ref] = lambda instance: cell[0](instance)
            cell.append(self.compile(target))
            self.refs[ref] = cell[0]
        return self.refs[ref]


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


def _json_key(item: Any) -> tuple[str, Any]:
    """A hashable key under which two JSON scalars are equal exactly when ``_json_equal`` says."""
    if isinstance(item, bool):
        return ("boolean", item)
    if _is_number(item):
        return ("number", item)  # 1 == 1.0 and hash(1) == hash(1.0), as JSON has it
    return (type(item).__name__, item)


def _pairwise_unique(instance: list[Any]) -> bool:
    return not any(_json_equal(a, b) for i, a in enumerate(instance) for b in instance[i + 1 :])


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


def _is_regex(text: str) -> bool:
    try:
        re.compile(text)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


_TYPES: Final[dict[str, Check]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    # An integral float (1.0) is an integer to jsonschema too, but rare: not certain.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
}
