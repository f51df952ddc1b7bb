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

from agent_presets.lib.model import Preset, PresetValidationError, duplicate_preset_error
from agent_presets.lib.schema import (
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
    from agent_presets.lib.bundles import PromptSpec, ResourceSpec
    from agent_presets.lib.parsecache import ParseCache, Position
    from agent_presets.lib.schema import PathKey
    from agent_presets.lib.yamlfile import PresetYamlLoader as PresetYamlLoader

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
_YAML_NAMES: Final = frozenset(
    {"PresetYamlLoader", "MAX_VALUES", "MAX_DEPTH", "MAX_SHAPE_PROBLEMS"}
)
"""Names that live in ``yamlfile`` (it imports PyYAML), given here when first asked for."""


def __getattr__(name: str) -> Any:
    if name in _YAML_NAMES:
        from agent_presets.lib import yamlfile

        return getattr(yamlfile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MEMBER_KEYS: Final = ("prompts", "resources", "resource_templates")
"""The file's keys besides ``presets``: the prompts and resources its presets may list."""


class MemberSink(Protocol):
    """Where ``parse_presets`` puts a file's members (``bundles.FileMembers``, a catalog)."""

    prompts: list[PromptSpec]
    resources: list[ResourceSpec]


# The characters YAML does not allow in a stream: the complement of the set PyYAML's
# reader allows ([^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]).
# Spelled as what is refused, it compiles in under a millisecond; the negated class
# took 5 to 8 ms of every start-up (re builds a class's ranges in pure Python).
_NON_PRINTABLE: Final = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"
)


def _char_name(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"an unpaired surrogate U+{code:04X}"
    name = "NUL" if code == 0 else unicodedata.name(char, "a control character")
    return f"U+{code:04X} ({name})"


def _line_col(text: str, index: int) -> Position:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


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
    text: str, source: str, members: MemberSink | None = None, *, cache: ParseCache | None = None
) -> tuple[list[Preset], list[PresetValidationError]]:
    """Every valid preset of a file and every problem found; never raises for bad content.

    Each problem is located (``path:line:col``) and quotes at most a short
    prefix of any value. ``members``, when given, receives the file's valid
    prompts, resources and resource templates (``bundles.read_members``);
    their problems are among those returned. ``bundles`` is imported only for
    a file that declares some, so a tools-only catalog never loads it.
    ``cache`` keeps what YAML read of a file without problems, and answers
    for the same text next time (PyYAML is then not imported at all).
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
    composed = cache.get(text) if cache is not None else None
    kept = composed is not None
    if composed is None:
        from agent_presets.lib.yamlfile import compose

        read = compose(text, source)
        if isinstance(read, list):
            return [], read
        composed = read
    data = composed.data
    positions, key_positions, duplicates = composed.values, composed.keys, composed.duplicates
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
        from agent_presets.lib.bundles import read_members

        def line_of(path: PathKey) -> int | None:
            pos = positions.get(path)
            return pos[0] if pos else None

        found = read_members(data, source, bad_members, lambda p, m: at(p, m), line_of)
        members.prompts.extend(found.prompts)
        members.resources.extend(found.resources)
        problems.extend(found.problems)
    problems.sort(key=lambda p: (p.line or 0, p.column or 0))
    if cache is not None and not kept and not problems:
        cache.put(text, composed)
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


MAX_PROBLEMS = 100
"""Schema problems reported per file; past this, the file's presets are all skipped."""


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
