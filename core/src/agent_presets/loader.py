"""Reading preset files: YAML with positions, validated against the JSON Schema.

YAML 1.1 reads unquoted ``on``/``off``/``yes``/``no`` as booleans; preset files
say ``default_state: off`` and mean the string, so this loader treats only
``true``/``false`` as booleans. Every problem is reported as
``path:line:col: message`` naming the preset and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from os import PathLike, fspath
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError

from agent_presets.model import (
    DANGEROUS_RISKS,
    DuplicatePresetError,
    Preset,
    PresetValidationError,
)

SCHEMA_NAME = "preset.schema.json"
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PresetYamlLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader whose only booleans are true and false."""


PresetYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
PresetYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)

Position = tuple[int, int]
PathKey = tuple[str | int, ...]


def schema() -> dict[str, Any]:
    """The preset-file JSON Schema shipped in the package."""
    value: dict[str, Any] = json.loads(_schema_text())
    return value


@cache
def _schema_text() -> str:
    return (files("agent_presets") / "schemas" / SCHEMA_NAME).read_text(encoding="utf-8")


@cache
def _file_validator() -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(schema())


@cache
def _preset_validator() -> jsonschema.protocols.Validator:
    s = schema()
    return jsonschema.Draft202012Validator({"$defs": s["$defs"], "$ref": "#/$defs/preset"})


def preset_schema_problems(mapping: Any) -> list[str]:
    """Schema problems of one preset mapping, as messages (empty when valid)."""
    return [_describe(e, mapping) for e in _sorted_errors(_preset_validator(), mapping)]


# ---------------------------------------------------------------- loading


def read_preset_source(path: str | PathLike[str] | Traversable) -> tuple[str, str]:
    """``(display name, text)`` of a preset file, or an error saying why it cannot be read."""
    source = _display(path)
    try:
        text = (
            path.read_text(encoding="utf-8")
            if isinstance(path, Traversable)
            else Path(fspath(path)).read_text(encoding="utf-8")
        )
    except (OSError, UnicodeDecodeError) as exc:
        raise PresetValidationError(
            f"cannot read preset file: {_os_reason(exc)}", source=source
        ) from None
    return source, text


def load_preset_file(path: str | PathLike[str] | Traversable) -> list[Preset]:
    """Load and validate one preset file; raise one error carrying every problem."""
    source, text = read_preset_source(path)
    return load_preset_text(text, source)


def load_preset_text(text: str, source: str = "<string>") -> list[Preset]:
    presets, problems = parse_presets(text, source)
    if problems:
        raise _combined(problems, source)
    return presets


def parse_presets(text: str, source: str) -> tuple[list[Preset], list[PresetValidationError]]:
    """Every valid preset of a file and every problem found; never raises for bad content."""
    marks = _Positions()
    try:
        loader = PresetYamlLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                marks.walk(node)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        what = exc.problem or "invalid YAML"
        return [], [
            PresetValidationError(
                f"YAML syntax error: {what}", source=source, line=line, column=col
            )
        ]
    except _Refused as exc:
        return [], [
            PresetValidationError(
                f"{exc.message}; write the values out instead",
                source=source,
                line=exc.mark.line + 1,
                column=exc.mark.column + 1,
            )
        ]
    except yaml.YAMLError as exc:
        return [], [PresetValidationError(f"YAML error: {exc}", source=source)]
    positions, key_positions, duplicates = marks.values, marks.keys, marks.duplicates
    problems: list[PresetValidationError] = []
    if data is None:
        problems.append(
            PresetValidationError(
                "the file is empty; a preset file holds a 'presets:' list",
                source=source,
                line=1,
                column=1,
            )
        )
        return [], problems

    def at(path: PathKey, message: str, *, key: bool = False) -> PresetValidationError:
        pos = (key_positions.get(path) if key else None) or _nearest(positions, path)
        line, col = pos if pos else (None, None)
        return PresetValidationError(message, source=source, line=line, column=col)

    for path, line, col in duplicates:
        label, rest = _preset_label(data, path)
        where = f"{label}, field {_field_label(rest)!r}" if label else _field_label(path)
        problems.append(
            PresetValidationError(
                f"{where}: key {path[-1]!r} appears twice in one mapping; keep one",
                source=source,
                line=line,
                column=col,
            )
        )
    bad_presets: set[int] = set()
    for error in _sorted_errors(_file_validator(), data):
        path = tuple(error.absolute_path)
        if len(path) >= 2 and path[0] == "presets" and isinstance(path[1], int):
            bad_presets.add(path[1])
        extra = _extra_key(error)
        if extra is not None:
            problems.append(at((*path, extra), _describe(error, data), key=True))
        else:
            problems.append(at(path, _describe(error, data)))
    if not isinstance(data, Mapping) or not isinstance(data.get("presets"), list):
        return [], problems

    presets: list[Preset] = []
    first_seen: dict[str, int] = {}
    for index, item in enumerate(data["presets"]):
        if index in bad_presets:
            continue
        try:
            preset = Preset.from_checked(item, source)
        except PresetValidationError as exc:
            problems.append(at(("presets", index), exc.message))
            continue
        if preset.name in first_seen:
            first = positions.get(("presets", first_seen[preset.name]))
            where = f" (first defined at line {first[0]})" if first else ""
            err = at(
                ("presets", index, "name"),
                f"preset {preset.name!r} is defined twice in this file{where}",
            )
            problems.append(
                DuplicatePresetError(
                    err.message, source=err.source, line=err.line, column=err.column
                )
            )
            continue
        first_seen[preset.name] = index
        presets.append(preset)
    problems.sort(key=lambda p: (p.line or 0, p.column or 0))
    return presets, problems


def _combined(problems: list[PresetValidationError], source: str) -> PresetValidationError:
    if len(problems) == 1:
        return problems[0]
    first = problems[0]
    text = "\n".join(str(p) for p in problems)
    err = PresetValidationError(
        f"{len(problems)} problems:\n{text}", source=None, problems=problems
    )
    err.source, err.line, err.column = source, first.line, first.column
    return err


# ---------------------------------------------------------------- positions


MAX_VALUES = 200_000
"""How many values a file may expand to through aliases before it is refused."""
MAX_DEPTH = 100


class _Positions:
    """Where each value and key of a YAML document starts, walked once per node.

    Walking the node graph (not the constructed data) before construction sees
    merge keys as written, visits an aliased node once however often it is
    referenced, and catches alias cycles and alias bombs before jsonschema
    would walk their expansion.
    """

    def __init__(self) -> None:
        self.values: dict[PathKey, Position] = {}
        self.keys: dict[PathKey, Position] = {}
        self.duplicates: list[tuple[PathKey, int, int]] = []
        self._sizes: dict[int, int] = {}
        self._active: set[int] = set()

    def walk(self, node: yaml.Node, path: PathKey = ()) -> int:
        """Record positions below ``node``; return how many values it expands to."""
        mark = node.start_mark
        self.values.setdefault(path, (mark.line + 1, mark.column + 1))
        key = id(node)
        if key in self._sizes:
            return self._sizes[key]
        if key in self._active:
            raise _Refused("an alias refers to a value that contains it", mark)
        if len(self._active) >= MAX_DEPTH:
            raise _Refused(f"values are nested more than {MAX_DEPTH} levels deep", mark)
        self._active.add(key)
        size = 1
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                k = key_node.value
                child = (*path, k)
                kmark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key_node.tag != "tag:yaml.org,2002:merge":
                    if k in seen:
                        self.duplicates.append((child, *kmark))
                    seen.add(k)
                self.keys.setdefault(child, kmark)
                size += self.walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                size += self.walk(item, (*path, i))
        self._active.discard(key)
        if size > MAX_VALUES:
            raise _Refused(
                f"the document expands to more than {MAX_VALUES:,} values through aliases",
                mark,
            )
        self._sizes[key] = size
        return size


class _Refused(Exception):
    def __init__(self, message: str, mark: yaml.Mark) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _nearest(positions: dict[PathKey, Position], path: PathKey) -> Position | None:
    while True:
        if path in positions:
            return positions[path]
        if not path:
            return None
        path = path[:-1]


# ---------------------------------------------------------------- messages


def _sorted_errors(validator: jsonschema.protocols.Validator, data: Any) -> list[ValidationError]:
    return sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def _extra_key(error: ValidationError) -> str | None:
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = set(_schema_of(error).get("properties", {}))
        extras = [k for k in error.instance if k not in allowed]
        if extras:
            return str(extras[0])
    return None


def _field_label(path: Iterable[str | int]) -> str:
    parts = list(path)
    label = ""
    if len(parts) >= 2 and parts[0] == "presets" and isinstance(parts[1], int):
        label = f"presets[{parts[1]}]"
        parts = parts[2:]
    for p in parts:
        label += f"[{p}]" if isinstance(p, int) else (f".{p}" if label else str(p))
    return label or "file"


def _preset_label(data: Any, path: tuple[str | int, ...]) -> tuple[str, tuple[str | int, ...]]:
    """('preset 'name'', remaining path) for an error inside a preset of a file."""
    if len(path) >= 2 and path[0] == "presets" and isinstance(path[1], int):
        try:
            name = data["presets"][path[1]].get("name")
        except (AttributeError, IndexError, KeyError, TypeError):
            name = None
        label = f"preset {name!r}" if isinstance(name, str) else f"presets[{path[1]}]"
        return label, path[2:]
    return "", path


def _describe(error: ValidationError, data: Any) -> str:
    path = tuple(error.absolute_path)
    label, rest = _preset_label(data, path)
    if (
        not label
        and isinstance(data, Mapping)
        and "presets" not in path
        and isinstance(data.get("name"), str)
    ):
        label = f"preset {data['name']!r}"
    field = _field_label(rest) if rest else ""
    where = ", ".join(x for x in (label, f"field {field!r}" if field else "") if x)
    prefix = f"{where}: " if where else ""
    v, inst = error.validator, error.instance
    if v == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else error.message
        hint = " (a preset file holds a 'presets:' list)" if missing == "presets" else ""
        return f"{prefix}missing required field {missing!r}{hint}"
    if v == "additionalProperties":
        extra = _extra_key(error)
        allowed = ", ".join(_schema_of(error).get("properties", {}))
        return f"{prefix}unknown field {extra!r}; allowed fields: {allowed}"
    if v == "enum":
        options = ", ".join(str(o) for o in _schema_of(error).get("enum", []))
        return f"{prefix}{inst!r} is not one of: {options}"
    if v == "const" and rest and rest[-1] == "default_state":
        risk = _risk_of(data, path)
        return (
            f"{label} has risk {risk!r} and must use default_state: off "
            "(dangerous presets are enabled only by an explicit override)"
        )
    if v == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{prefix}expected {expected}, got {_json_type(inst)} {inst!r}"
    if v == "pattern" and "propertyNames" in error.schema_path:
        return f"{prefix}field name {inst!r} must be snake_case, like activity or world_id"
    if v == "pattern" and rest and rest[-1] in ("name", "group"):
        return f"{prefix}{inst!r} must be kebab-case (lowercase letters, digits and '-')"
    if v == "pattern" and rest and rest[0] == "tool_ids":
        return f"{prefix}tool id {inst!r} must be dotted, like 'drawing.set-tool'"
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


def _risk_of(data: Any, path: tuple[str | int, ...]) -> str:
    try:
        node = data
        for p in path[:-1]:
            node = node[p]
        risk = node.get("risk")
    except (KeyError, IndexError, TypeError, AttributeError):
        return "dangerous"
    return str(risk) if risk in DANGEROUS_RISKS else "dangerous"


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


def _display(path: str | PathLike[str] | Traversable) -> str:
    if isinstance(path, Traversable) and not isinstance(path, Path):
        return str(path)
    try:
        p = Path(fspath(path))
    except TypeError:
        return str(path)
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)
