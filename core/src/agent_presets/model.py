"""The data model: presets, resolutions, tool definitions and the errors.

Everything here is plain, frozen data. Behaviour lives in adapters; no runtime
object hides inside a definition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

DefaultState = Literal["auto", "off"]
Risk = Literal["normal", "filesystem-read", "filesystem-write", "destructive", "shell"]
Reason = Literal["context", "override"]
OverrideState = Literal["on", "off", "auto"]

DEFAULT_STATES: Final = ("auto", "off")
RISKS: Final = ("normal", "filesystem-read", "filesystem-write", "destructive", "shell")
DANGEROUS_RISKS: Final = frozenset({"filesystem-write", "destructive", "shell"})
OVERRIDE_STATES: Final = ("on", "off", "auto")
ANY: Final = "any"
NONE: Final = "none"

NAME_RE: Final = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TOOL_ID_RE: Final = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
FIELD_RE: Final = re.compile(r"^[a-z][a-z0-9_]*$")


# --------------------------------------------------------------------- errors


class PresetError(Exception):
    """Base of every error agent-presets raises on purpose."""


class PresetValidationError(PresetError, ValueError):
    """A definition, context, override or adapter is invalid.

    ``source`` is the file (or plugin) it came from and ``line``/``column`` the
    1-based position, where known; ``str()`` gives ``path:line:col: message``.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        problems: Iterable[PresetValidationError] = (),
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.problems: tuple[PresetValidationError, ...] = tuple(problems)
        super().__init__(self.location_prefix() + message)

    def location_prefix(self) -> str:
        if self.source is None:
            return ""
        parts = [self.source]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts) + ": "

    def all_problems(self) -> tuple[PresetValidationError, ...]:
        """Every individual problem: the collected ones, or this error alone."""
        return self.problems or (self,)


class UnknownPresetError(PresetValidationError, LookupError):
    """A preset name that no registered preset has."""


class DuplicatePresetError(PresetValidationError):
    """Two presets with one name."""


class DuplicateToolError(PresetValidationError):
    """Two tools with one id or one MCP name where only one may be."""


class OwnershipError(PresetError):
    """A tool name is held by someone else in the tool registry."""


class ToolCallError(PresetError):
    """A tool could not run: bad arguments, missing runtime, or a refused action.

    The message is written for the model that called the tool: it says what
    was wrong and what to do next.
    """


class ToolArgumentError(ToolCallError, ValueError):
    """The arguments do not match the tool's input schema."""


class MissingRuntimeError(ToolCallError, LookupError):
    """The app does not provide the runtime object a tool needs."""


# --------------------------------------------------------------------- presets


def _freeze_pattern(pattern: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(pattern))


@dataclass(frozen=True)
class Preset:
    """An immutable capability bundle. Constructing one validates it."""

    name: str
    default_state: DefaultState
    risk: Risk
    contexts: tuple[Mapping[str, Any], ...]
    tool_ids: tuple[str, ...]
    group: str | None = None
    system_prompt: str | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        problems = []
        for attr in ("contexts", "tool_ids"):
            value = getattr(self, attr)
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
                problems.append(
                    f"preset {self.name!r}: {attr} must be a list, not {type(value).__name__}"
                )
            else:
                object.__setattr__(self, attr, tuple(value))
        if not problems:
            problems = list(_preset_problems(self))
        if problems:
            raise PresetValidationError("; ".join(problems), source=self.source)
        object.__setattr__(self, "contexts", tuple(_freeze_pattern(p) for p in self.contexts))

    @property
    def dangerous(self) -> bool:
        return self.risk in DANGEROUS_RISKS

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any], source: str | None = None) -> Preset:
        """Validate ``mapping`` against the preset schema, then build the preset."""
        from agent_presets.loader import preset_schema_problems

        problems = preset_schema_problems(mapping)
        if problems:
            errors = [PresetValidationError(p, source=source) for p in problems]
            if len(errors) == 1:
                raise errors[0]
            raise PresetValidationError(
                f"{len(errors)} problems: " + "; ".join(e.message for e in errors),
                source=source,
                problems=errors,
            )
        return cls.from_checked(mapping, source)

    @classmethod
    def from_checked(cls, mapping: Mapping[str, Any], source: str | None = None) -> Preset:
        """Build from a mapping already checked against the schema (the loader's path)."""
        return cls(
            name=mapping["name"],
            group=mapping.get("group"),
            default_state=mapping["default_state"],
            risk=mapping["risk"],
            contexts=tuple(mapping["contexts"]),
            tool_ids=tuple(mapping["tool_ids"]),
            system_prompt=mapping.get("system_prompt"),
            source=source,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.group is not None:
            data["group"] = self.group
        data.update(
            default_state=self.default_state,
            risk=self.risk,
            contexts=[dict(p) for p in self.contexts],
            tool_ids=list(self.tool_ids),
        )
        if self.system_prompt is not None:
            data["system_prompt"] = self.system_prompt
        return data


def _preset_problems(p: Preset) -> Iterable[str]:
    if not isinstance(p.name, str) or not NAME_RE.match(p.name):
        yield f"preset name {p.name!r} must be kebab-case (lowercase letters, digits, '-')"
        return
    where = f"preset {p.name!r}"
    if p.group is not None and (not isinstance(p.group, str) or not NAME_RE.match(p.group)):
        yield f"{where}: group {p.group!r} must be kebab-case"
    if p.default_state not in DEFAULT_STATES:
        yield f"{where}: default_state {p.default_state!r} must be one of: auto, off"
    if p.risk not in RISKS:
        yield f"{where}: risk {p.risk!r} must be one of: {', '.join(RISKS)}"
    elif p.risk in DANGEROUS_RISKS and p.default_state == "auto":
        yield (
            f"{where} has risk {p.risk!r} and must use default_state: off "
            "(dangerous presets are enabled only by an explicit override)"
        )
    if p.default_state == "auto" and not p.contexts:
        yield (
            f"{where} is auto but lists no contexts, so it could never activate; "
            "add a pattern such as {surface: any} or use default_state: off"
        )
    for i, pattern in enumerate(p.contexts):
        for problem in pattern_problems(pattern):
            yield f"{where}: contexts[{i}]: {problem}"
    if not p.tool_ids:
        yield f"{where}: tool_ids must list at least one tool id"
    seen: set[str] = set()
    for tool_id in p.tool_ids:
        if not isinstance(tool_id, str) or not TOOL_ID_RE.match(tool_id):
            yield f"{where}: tool id {tool_id!r} must be dotted, like 'drawing.set-tool'"
        elif tool_id in seen:
            yield f"{where}: tool id {tool_id!r} is listed twice"
        seen.add(tool_id)
    if p.system_prompt is not None and not isinstance(p.system_prompt, str):
        yield f"{where}: system_prompt must be a string"


def pattern_problems(pattern: object) -> Iterable[str]:
    """Why a context pattern is malformed (nothing when it is fine)."""
    if not isinstance(pattern, Mapping):
        yield f"a context pattern must be a mapping of fields, not {type(pattern).__name__}"
        return
    if not pattern:
        yield "an empty context pattern matches everything; write {surface: any} to say so"
    for key, value in pattern.items():
        if not isinstance(key, str) or not FIELD_RE.match(key):
            yield f"field name {key!r} must be snake_case"
        elif not _is_scalar(value):
            kind = type(value).__name__
            yield f"field {key!r} must be a string, number, boolean or null, not {kind}"
        elif key == "canvas_visible" and not (isinstance(value, bool) or value == ANY):
            yield f"field 'canvas_visible' must be true, false or any, not {value!r}"


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


# ----------------------------------------------------------------- resolution


@dataclass(frozen=True)
class ActivePreset:
    name: str
    reason: Reason
    risk: Risk


@dataclass(frozen=True)
class PromptFragment:
    preset: str
    prompt: str


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving presets against a context and overrides."""

    active_presets: tuple[ActivePreset, ...] = ()
    tool_ids: tuple[str, ...] = ()
    prompt_fragments: tuple[PromptFragment, ...] = ()

    @property
    def active_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.active_presets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "active_presets": [
                {"name": a.name, "reason": a.reason, "risk": a.risk} for a in self.active_presets
            ],
            "tool_ids": list(self.tool_ids),
            "prompt_fragments": [
                {"preset": f.preset, "prompt": f.prompt} for f in self.prompt_fragments
            ],
        }


# ---------------------------------------------------------------------- tools

ToolRun = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class ToolDef:
    """An MCP-facing tool: what the tool registry holds and the server serves.

    The manager stamps a preset tool with where it came from, so nothing
    downstream has to work it out again: ``preset`` names the active preset
    that provides it, and ``risk`` is what calling it may do: its preset's
    risk, or None when its annotations say ``readOnlyHint: true`` (it changes
    nothing, whatever the preset's risk). A host's own tool has neither.
    ``runtime`` is the app attribute the tool acts on (its adapter's
    ``runtime``), or None when that is not known; the server serializes calls
    by it, and a call of unknown runtime as if it touched every runtime.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    run: ToolRun = field(compare=False)
    annotations: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    managed_owner: str | None = None
    managed_source: str | None = None
    title: str | None = None
    preset: str | None = None
    risk: Risk | None = None
    runtime: str | None = None
