"""Reading preset files: YAML with positions, validated against the JSON Schema.

YAML 1.1 reads unquoted ``on``/``off``/``yes``/``no`` as booleans; preset files
say ``default_state: off`` and mean the string, so this loader treats only
``true``/``false`` as booleans (and a date stays a string). Every problem is
reported as ``path:line:col: message`` naming the preset and the field.

Preset files come from any installed plugin, so the loader assumes nothing of
them: only regular files are read, and no more of one than the size limit;
a file may hold only what JSON can (strings, numbers, booleans, null, lists,
and mappings with string keys); anything else (a complex ``?`` key, a tag, a
control character) is a located problem, never an exception.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Callable, Mapping
from importlib.resources.abc import Traversable
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import yaml

from agent_presets.model import Preset, PresetValidationError, duplicate_preset_error
from agent_presets.schema import (
    SCHEMA_NAME,
    clip,
    describe,
    extra_key,
    field_label,
    file_errors,
    preset_label,
    problem_path,
    quote,
    schema,
    schema_text,
)

if TYPE_CHECKING:
    from agent_presets.bundles import PromptSpec, ResourceSpec

__all__ = [
    "MAX_FILE_SIZE",
    "MAX_FILE_SIZE_ENV",
    "SCHEMA_NAME",
    "PresetYamlLoader",
    "decode_preset_bytes",
    "load_preset_file",
    "load_preset_text",
    "max_file_size",
    "parse_presets",
    "parse_size",
    "read_preset_source",
    "schema",
    "schema_text",
]
MEMBER_KEYS: Final = ("prompts", "resources", "resource_templates")
"""The file's keys besides ``presets``: the prompts and resources its presets may list."""


class MemberSink(Protocol):
    """Where ``parse_presets`` puts a file's members (``bundles.FileMembers``, a catalog)."""

    prompts: list[PromptSpec]
    resources: list[ResourceSpec]


_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_YAML: Final = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_YAML + t for t in ("str", "int", "float", "bool", "null"))
SEQ, MAP, MERGE = _YAML + "seq", _YAML + "map", _YAML + "merge"
_PLAIN_TAGS: Final = frozenset({STR, INT, FLOAT, BOOL, NULL, SEQ, MAP})
"""The tags of JSON's values: the only ones a preset file may hold."""


class PresetYamlLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader whose only booleans are true and false, and whose dates are strings."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception:
            # An explicit !!int abc or !!float x reaches int()/float() and raises
            # ValueError; say where instead of letting it escape.
            value = node.value if isinstance(node, yaml.ScalarNode) else ""
            raise _Refused(
                f"YAML syntax error: {quote(value)} cannot be read as {_tag_label(node.tag)}; "
                "quote it if you mean the text",
                node.start_mark,
            ) from None


# Implicit resolvers: JSON's values only. No YAML 1.1 yes/no/on/off booleans, no
# timestamps (a date is a string, as in JSON), no '=' value key.
PresetYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag in (INT, FLOAT, NULL, MERGE)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
PresetYamlLoader.add_implicit_resolver(
    BOOL,
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _tag_label(tag: str | None) -> str:
    short = "!!" + tag[len(_YAML) :] if tag and tag.startswith(_YAML) else (tag or "?")
    kind = {INT: "an integer", FLOAT: "a number", BOOL: "a boolean", NULL: "null"}.get(tag or "")
    return f"{kind} ({short})" if kind else clip(short, 60)


# The characters YAML allows in a stream (PyYAML's reader checks the same set).
_NON_PRINTABLE: Final = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def _char_name(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"an unpaired surrogate U+{code:04X}"
    name = "NUL" if code == 0 else unicodedata.name(char, "a control character")
    return f"U+{code:04X} ({name})"


def _char_at(text: str, line: int, col: int) -> str:
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    return text[start + col - 1 : start + col]


def _line_col(text: str, index: int) -> Position:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


Position = tuple[int, int]
PathKey = tuple[str | int, ...]


# ---------------------------------------------------------------- reading

MAX_FILE_SIZE: Final = 1024 * 1024
"""Bytes a preset file may hold; a larger file is refused before it is parsed."""
MAX_FILE_SIZE_ENV: Final = "PRESETS_MAX_FILE_SIZE"
"""Environment variable that raises (or lowers) ``MAX_FILE_SIZE`` for every load."""

_UNITS: Final = {"": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2}
_UNITS_BINARY: Final = {"mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}
_SIZE_RE: Final = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from ``2097152``, ``512KiB``, ``2MiB`` or ``2MB``; ValueError for anything else."""
    match = _SIZE_RE.match(text)
    unit = match.group(2).lower() if match else ""
    factor = _UNITS.get(unit) or _UNITS_BINARY.get(unit)
    if match is None or factor is None:
        raise ValueError(f"{quote(text)} is not a size; write bytes such as 2097152 or 2MiB")
    return int(match.group(1)) * factor


def max_file_size(env: Mapping[str, str] | None = None) -> int:
    """The size limit of a preset file: ``PRESETS_MAX_FILE_SIZE`` when set, else 1 MiB."""
    raw = (os.environ if env is None else env).get(MAX_FILE_SIZE_ENV, "").strip()
    if not raw:
        return MAX_FILE_SIZE
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise PresetValidationError(f"{MAX_FILE_SIZE_ENV}: {exc}") from None


def read_preset_source(
    path: str | PathLike[str] | Traversable, *, max_size: int | None = None
) -> tuple[str, str]:
    """``(display name, text)`` of a preset file, or an error saying why it cannot be read.

    Only a regular file is read (a FIFO would block, a device never ends), and
    at most ``max_size`` bytes of it (default ``max_file_size()``), so no file
    costs more memory or time than the limit before it is refused.
    """
    source = _display(path)
    limit = max_file_size() if max_size is None else max_size
    if isinstance(path, str | PathLike):
        data = _read_file(fspath(path), limit, source)
    else:
        data = _read_traversable(path, limit, source)
    return source, decode_preset_bytes(data, source)


def _read_file(path: str, limit: int, source: str) -> bytes:
    try:
        # stat before open: a device or socket is refused without being opened at all.
        _check_regular(os.stat(path), limit, source)
        fd = os.open(path, _OPEN_FLAGS)
    except PresetValidationError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise _unreadable(exc, source) from None
    try:
        # The path may have been swapped since the stat: what counts is the file opened.
        _check_regular(os.fstat(fd), limit, source)
        data = _read_at_most(lambda n: os.read(fd, n), limit + 1)
    except OSError as exc:
        raise _unreadable(exc, source) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _too_large(None, limit, source)
    return data


_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the stat must not block the open
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(st: os.stat_result, limit: int, source: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
        raise PresetValidationError(
            f"not a regular file ({kind}); a preset file must be a regular YAML file",
            source=source,
        )
    if st.st_size > limit:
        raise _too_large(st.st_size, limit, source)


def _read_traversable(path: Traversable, limit: int, source: str) -> bytes:
    try:
        if path.is_dir():
            raise PresetValidationError(
                "not a regular file (a directory); a preset file must be a regular YAML file",
                source=source,
            )
        with path.open("rb") as stream:
            data = _read_at_most(stream.read, limit + 1)
    except PresetValidationError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise _unreadable(exc, source) from None
    if len(data) > limit:
        raise _too_large(None, limit, source)
    return data


def _read_at_most(read: Callable[[int], bytes | None], size: int) -> bytes:
    """Up to ``size`` bytes, however short each read is: a stream never costs more."""
    chunks: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = read(min(remaining, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _unreadable(exc: BaseException, source: str) -> PresetValidationError:
    return PresetValidationError(f"cannot read preset file: {_os_reason(exc)}", source=source)


def _too_large(size: int | None, limit: int, source: str) -> PresetValidationError:
    # A stream's size is unknown: it was read up to one byte past the limit, no further.
    what = f"is {size:,} bytes, over" if size is not None else "is larger than"
    return PresetValidationError(
        f"the file {what} the limit of {limit:,} bytes for a preset file; split it, "
        f"or raise the limit (presets validate --max-file-size, or {MAX_FILE_SIZE_ENV})",
        source=source,
    )


_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")


def decode_preset_bytes(data: bytes, source: str) -> str:
    """The text of a preset file's bytes, or an error at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
    line_start = data.rfind(b"\n", 0, start) + 1
    hint = " (it starts with a UTF-16 byte order mark)" if data.startswith(_UTF16_BOMS) else ""
    raise PresetValidationError(
        f"cannot read preset file: it is not UTF-8 text{hint} (byte 0x{data[start]:02x}); "
        "save it as UTF-8",
        source=source,
        line=data.count(b"\n", 0, start) + 1,
        column=len(data[line_start:start].decode("utf-8", "replace")) + 1,
    )


# ---------------------------------------------------------------- loading


def load_preset_file(
    path: str | PathLike[str] | Traversable, *, max_size: int | None = None
) -> list[Preset]:
    """Load and validate one preset file; raise one error carrying every problem."""
    source, text = read_preset_source(path, max_size=max_size)
    return load_preset_text(text, source)


def load_preset_text(text: str, source: str = "<string>") -> list[Preset]:
    presets, problems = parse_presets(text, source)
    if problems:
        raise _combined(problems, source)
    return presets


def parse_presets(
    text: str, source: str, members: MemberSink | None = None
) -> tuple[list[Preset], list[PresetValidationError]]:
    """Every valid preset of a file and every problem found; never raises for bad content.

    Each problem is located (``path:line:col``) and quotes at most a short
    prefix of any value. ``members``, when given, receives the file's valid
    prompts, resources and resource templates (``bundles.read_members``);
    their problems are among those returned. ``bundles`` is imported only for
    a file that declares some, so a tools-only catalog never loads it.
    """
    bad_char = _NON_PRINTABLE.search(text)
    if bad_char is not None:
        line, col = _line_col(text, bad_char.start())
        return [], [
            PresetValidationError(
                f"the file holds {_char_name(bad_char.group())}, which YAML does not allow; "
                "remove it",
                source=source,
                line=line,
                column=col,
            )
        ]
    marks = _Positions()
    try:
        loader = PresetYamlLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                marks.walk(node)
            if marks.problems:
                return [], [
                    PresetValidationError(m, source=source, line=line, column=col)
                    for m, line, col in marks.problems
                ]
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        return [], [_syntax_error(exc, text, source)]
    except _Refused as exc:
        return [], [
            PresetValidationError(
                exc.message,
                source=source,
                line=exc.mark.line + 1,
                column=exc.mark.column + 1,
            )
        ]
    except yaml.YAMLError as exc:
        return [], [
            PresetValidationError(f"YAML error: {clip(str(exc))}", source=source, line=1, column=1)
        ]
    except RecursionError:
        # Only the pure-Python parser recurses per level; libyaml stops at its own depth.
        return [], [
            PresetValidationError(
                f"values are nested more than {MAX_DEPTH} levels deep",
                source=source,
                line=1,
                column=1,
            )
        ]
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
        where = (
            f"{label}, field {quote(field_label(rest))}" if label else clip(field_label(path), 80)
        )
        problems.append(
            PresetValidationError(
                f"{where}: key {quote(path[-1])} appears twice in one mapping; keep one",
                source=source,
                line=line,
                column=col,
            )
        )
    errors = file_errors(data, limit=MAX_PROBLEMS + 1)
    bad_presets: set[int] = set()
    bad_members: set[tuple[str, int]] = set()
    for error in errors:
        path = problem_path(error)
        if len(path) >= 2 and path[0] == "presets" and isinstance(path[1], int):
            bad_presets.add(path[1])
        elif len(path) >= 2 and isinstance(path[0], str) and isinstance(path[1], int):
            bad_members.add((path[0], path[1]))
        extra = extra_key(error)
        if extra is not None:
            problems.append(at((*path, extra), describe(error, data), key=True))
        else:
            problems.append(at(path, describe(error, data)))
    if len(problems) > MAX_PROBLEMS or len(errors) > MAX_PROBLEMS:
        # Not every broken preset is known, so none of this file's presets is trusted.
        problems.sort(key=lambda p: (p.line or 0, p.column or 0))
        last = problems[MAX_PROBLEMS - 1]
        return [], [
            *problems[: MAX_PROBLEMS - 1],
            PresetValidationError(
                f"more than {MAX_PROBLEMS} problems; fix these first (no preset of this file "
                "was loaded)",
                source=source,
                line=last.line,
                column=last.column,
            ),
        ]
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
    if members is not None and any(key in data for key in MEMBER_KEYS):
        from agent_presets.bundles import read_members

        def line_of(path: PathKey) -> int | None:
            pos = positions.get(path)
            return pos[0] if pos else None

        found = read_members(data, source, bad_members, lambda p, m: at(p, m), line_of)
        members.prompts.extend(found.prompts)
        members.resources.extend(found.resources)
        problems.extend(found.problems)
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
MAX_SHAPE_PROBLEMS = 50
"""Keys and tags reported per file; past this, one line counts the rest."""
MAX_PROBLEMS = 100
"""Schema problems reported per file; past this, the file's presets are all skipped."""

_KEY_KINDS: Final = {INT: "a number", FLOAT: "a number", BOOL: "a boolean", NULL: "null"}


class _Positions:
    """Where each value and key of a YAML document starts, walked once per node.

    Walking the node graph (not the constructed data) before construction sees
    merge keys as written, visits an aliased node once however often it is
    referenced, and catches alias cycles and alias bombs before jsonschema
    would walk their expansion. It also finds what JSON cannot hold (a tag, a
    complex or non-string key) so the file is refused before construction,
    which would raise on an unhashable key or build a date or bytes.
    """

    def __init__(self) -> None:
        self.values: dict[PathKey, Position] = {}
        self.keys: dict[PathKey, Position] = {}
        self.duplicates: list[tuple[PathKey, int, int]] = []
        self.problems: list[tuple[str, int, int]] = []
        self._more = 0
        self._sizes: dict[int, int] = {}
        self._active: set[int] = set()

    def walk(self, node: yaml.Node, path: PathKey = ()) -> int:
        """Record positions below ``node``; return how many values it expands to."""
        self._walk(node, path)
        if self._more:
            self.problems.append(
                (f"and {self._more:,} more problem(s) like these", *self.problems[-1][1:])
            )
        return self._sizes.get(id(node), 1)

    def _walk(self, node: yaml.Node, path: PathKey) -> int:
        mark = node.start_mark
        self.values.setdefault(path, (mark.line + 1, mark.column + 1))
        key = id(node)
        if key in self._sizes:
            return self._sizes[key]
        if key in self._active:
            raise _Refused(
                "an alias refers to a value that contains it; write the values out instead", mark
            )
        if len(self._active) >= MAX_DEPTH:
            raise _Refused(f"values are nested more than {MAX_DEPTH} levels deep", mark)
        if len(self._sizes) + len(self._active) >= MAX_VALUES:
            raise _Refused(
                f"the document holds more than {MAX_VALUES:,} values; split it into several files",
                mark,
            )
        if node.tag not in _PLAIN_TAGS:
            self._tag_problem(node)
        self._active.add(key)
        size = 1
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                kmark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key_node.tag == MERGE and isinstance(key_node, yaml.ScalarNode):
                    size += self._walk(value_node, (*path, key_node.value))
                    continue
                k = self._key(key_node)
                if k is None:  # already reported: the file will not be constructed
                    continue
                child = (*path, k)
                if k in seen:
                    self.duplicates.append((child, *kmark))
                seen.add(k)
                self.keys.setdefault(child, kmark)
                size += self._walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                size += self._walk(item, (*path, i))
        self._active.discard(key)
        if size > MAX_VALUES:  # fewer distinct values than that (see above): aliases expand them
            raise _Refused(
                f"the document expands to more than {MAX_VALUES:,} values through aliases; "
                "write the values out instead",
                mark,
            )
        self._sizes[key] = size
        return size

    def _key(self, node: yaml.Node) -> str | None:
        """The string a mapping key is, or None after reporting why it cannot be one."""
        if not isinstance(node, yaml.ScalarNode):
            kind = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
            self._problem(
                f"a mapping key must be a field name, not {kind}; "
                "complex keys ('? ') are not allowed in a preset file",
                node,
            )
            return None
        if node.tag not in _PLAIN_TAGS:
            self._tag_problem(node)
            return None
        if node.tag != STR:
            what = "an empty key" if node.value in ("", "~") else f"the key {clip(node.value, 60)}"
            self._problem(
                f"{what} is read as {_KEY_KINDS.get(node.tag, 'a value')}, not a field name; "
                "a field name is text: rename it, or quote it",
                node,
            )
            return None
        value: str = node.value
        return value

    def _tag_problem(self, node: yaml.Node) -> None:
        self._problem(
            f"YAML syntax error: the tag {_tag_label(node.tag)} is not allowed in a preset file; "
            "write plain strings, numbers, booleans, lists and mappings",
            node,
        )

    def _problem(self, message: str, node: yaml.Node) -> None:
        if len(self.problems) >= MAX_SHAPE_PROBLEMS:
            self._more += 1
            return
        self.problems.append((message, node.start_mark.line + 1, node.start_mark.column + 1))


_OPENERS: Final = {
    "while parsing a flow sequence": "a flow sequence ([...])",
    "while parsing a flow mapping": "a flow mapping ({...})",
    "while scanning a quoted scalar": "a quoted string",
    "while scanning a simple key": "a key",
}
"""The parser's contexts that are an opened construct left unfinished, and how to name them.

Others (a block mapping, a plain scalar) are broken where the parser gave up,
so their problem is reported there.
"""


def _syntax_error(exc: yaml.MarkedYAMLError, text: str, source: str) -> PresetValidationError:
    """A YAML syntax error, at the construct it breaks and naming where the parser gave up.

    The parser notices an unclosed ``[`` or quote only lines later, where it
    gives up (the problem mark); the fix belongs where the construct opens
    (the context mark), so that is the position reported.
    """
    problem, opened = exc.problem_mark, exc.context_mark
    mark = problem or opened
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    what = clip(exc.problem or "invalid YAML")
    if "tab" not in what and _char_at(text, line, col) == "\t":
        what += " (a tab: YAML indents with spaces)"
    construct = _OPENERS.get(exc.context or "")
    if construct and problem and opened and opened.index < problem.index and "tab" not in what:
        return PresetValidationError(
            f"YAML syntax error in {construct} that starts here: {what}; the parser gave up "
            f"at line {line}, column {col}",
            source=source,
            line=opened.line + 1,
            column=opened.column + 1,
        )
    return PresetValidationError(f"YAML syntax error: {what}", source=source, line=line, column=col)


class _Refused(yaml.YAMLError):
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
    except (ValueError, OSError, RuntimeError):  # outside the cwd, a NUL byte, a symlink loop
        return str(p)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return clip(str(exc))
