"""Reading preset files: YAML with positions, validated against the JSON Schema.

YAML 1.1 reads unquoted ``on``/``off``/``yes``/``no`` as booleans; preset files
say ``default_state: off`` and mean the string, so this loader treats only
``true``/``false`` as booleans. Every problem is reported as
``path:line:col: message`` naming the preset and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from os import PathLike, fspath
from pathlib import Path
from typing import Any

import yaml

from agent_presets.model import Preset, PresetValidationError, duplicate_preset_error
from agent_presets.schema import (
    SCHEMA_NAME,
    describe,
    extra_key,
    field_label,
    file_errors,
    preset_label,
    problem_path,
    schema,
    schema_text,
)

__all__ = [
    "SCHEMA_NAME",
    "PresetYamlLoader",
    "load_preset_file",
    "load_preset_text",
    "parse_presets",
    "read_preset_source",
    "schema",
    "schema_text",
]
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PresetYamlLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader whose only booleans are true and false."""


# cli.py still imports this private name; it moves to ``schema.schema_text``.


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
        label, rest = preset_label(data, path)
        where = f"{label}, field {field_label(rest)!r}" if label else field_label(path)
        problems.append(
            PresetValidationError(
                f"{where}: key {path[-1]!r} appears twice in one mapping; keep one",
                source=source,
                line=line,
                column=col,
            )
        )
    bad_presets: set[int] = set()
    for error in file_errors(data):
        path = problem_path(error)
        if len(path) >= 2 and path[0] == "presets" and isinstance(path[1], int):
            bad_presets.add(path[1])
        extra = extra_key(error)
        if extra is not None:
            problems.append(at((*path, extra), describe(error, data), key=True))
        else:
            problems.append(at(path, describe(error, data)))
    if not isinstance(data, Mapping) or not isinstance(data.get("presets"), list):
        return [], problems

    presets: list[Preset] = []
    first_seen: dict[str, int] = {}
    for index, item in enumerate(data["presets"]):
        if index in bad_presets:
            continue
        # The file schema has just checked this preset: every rule is the schema's.
        preset = Preset.from_checked(item, source)
        if preset.name in first_seen:
            first = positions.get(("presets", first_seen[preset.name]))
            err = at(("presets", index, "name"), "")
            problems.append(
                duplicate_preset_error(
                    preset.name,
                    first_source=source,
                    first_line=first[0] if first else None,
                    source=source,
                    line=err.line,
                    column=err.column,
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
