"""The data model: presets, resolutions, tool definitions and the errors.

Everything here is plain, frozen data. Behaviour lives in adapters; no runtime
object hides inside a definition.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from agent_presets.lib.schema import preset_problems, schema

DefaultState = Literal["auto", "off"]
Risk = Literal["normal", "filesystem-read", "filesystem-write", "destructive", "shell"]
Reason = Literal["context", "override"]
OverrideState = Literal["on", "off", "auto"]

# The values and patterns below are the schema's, read from it so they cannot drift;
# the Literal types above spell them for the type checker (a test keeps them equal).
_PRESET_SCHEMA: Final = schema()["$defs"]
_PRESET_FIELDS: Final = _PRESET_SCHEMA["preset"]["properties"]
DEFAULT_STATES: Final[tuple[str, ...]] = tuple(_PRESET_FIELDS["default_state"]["enum"])
RISKS: Final[tuple[str, ...]] = tuple(_PRESET_FIELDS["risk"]["enum"])
DANGEROUS_RISKS: Final[frozenset[str]] = frozenset(
    _PRESET_SCHEMA["preset"]["if"]["properties"]["risk"]["enum"]
)
OVERRIDE_STATES: Final = ("on", "off", "auto")
ANY: Final = "any"
NONE: Final = "none"

DEFAULT_NAMESPACE: Final = ""
"""The MCP name prefix of a host that supplies none: no prefix, the names the plugins give.

A host supplies its own (``HostDefaults.namespace``, ``presets serve --namespace``)."""

NAME_RE: Final = re.compile(_PRESET_SCHEMA["name"]["pattern"])
TOOL_ID_RE: Final = re.compile(_PRESET_FIELDS["tool_ids"]["items"]["pattern"])
FIELD_RE: Final = re.compile(_PRESET_SCHEMA["pattern"]["propertyNames"]["pattern"])


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
        """``path:line:col: `` for the known parts of the location, or an empty string."""
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


def duplicate_preset_error(
    name: str,
    *,
    first_source: str | None,
    source: str | None,
    first_line: int | None = None,
    line: int | None = None,
    column: int | None = None,
) -> DuplicatePresetError:
    """The one wording of the rule "a preset name is defined once", wherever it is checked.

    The loader (within a file), the catalog (across plugins and files) and the
    registry (at registration) all report a second definition through this.
    """
    if first_line is not None and first_source == source:
        message = (
            f"preset {name!r} is defined twice in this file (first defined at line {first_line})"
        )
    else:
        message = (
            f"preset {name!r} is defined twice: in {first_source or '?'} and in "
            f"{source or '?'}; rename one of them"
        )
    return DuplicatePresetError(message, source=source, line=line, column=column)


class OwnershipError(PresetError):
    """A tool name is held by someone else in the tool registry."""


class ToolCallError(PresetError):
    """A tool could not run: bad arguments, missing runtime, or a refused action.

    The message is written for the model that called the tool: it says what
    was wrong and what to do next.
    """


class ToolResultError(ToolCallError):
    """A tool's result breaks its own output schema: the plugin's bug, told to the model."""


class ToolArgumentError(ToolCallError, ValueError):
    """The arguments do not match the tool's input schema."""


class MissingRuntimeError(ToolCallError, LookupError):
    """The app does not provide the runtime object a tool needs."""


# --------------------------------------------------------------------- presets


def _freeze_pattern(pattern: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(pattern))


@dataclass(frozen=True)
class Preset:
    """An immutable capability bundle. Constructing one validates it.

    ``max_tokens`` bounds what its tool definitions may cost in an agent's
    context (``presets validate`` counts them as ``presets budget`` does);
    ``pin`` asks ``serve --tool-budget`` to serve its tools first.
    """

    name: str
    default_state: DefaultState
    risk: Risk
    contexts: tuple[Mapping[str, Any], ...]
    tool_ids: tuple[str, ...] = ()
    group: str | None = None
    system_prompt: str | None = None
    source: str | None = field(default=None, compare=False)
    max_tokens: int | None = None
    pin: bool = False
    prompts: tuple[str, ...] = ()
    """Ids of the prompts served while the preset is active (declared under ``prompts:``)."""
    resources: tuple[str, ...] = ()
    """Ids of the resources and resource templates served while it is active."""

    def __post_init__(self) -> None:
        for attr in ("contexts", "tool_ids", "prompts", "resources"):
            value = getattr(self, attr)
            if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
                object.__setattr__(self, attr, tuple(value))
        problems = preset_problems(self._as_mapping())
        if problems:
            raise PresetValidationError("; ".join(problems), source=self.source)
        object.__setattr__(self, "contexts", tuple(_freeze_pattern(p) for p in self.contexts))

    def _as_mapping(self) -> dict[str, Any]:
        """The fields as the schema sees them: what a YAML file would say for this preset."""
        data: dict[str, Any] = {"name": self.name}
        if self.group is not None:
            data["group"] = self.group
        data["default_state"] = self.default_state
        data["risk"] = self.risk
        contexts: Any = self.contexts
        if isinstance(contexts, tuple):
            contexts = [dict(p) if isinstance(p, Mapping) else p for p in contexts]
        data["contexts"] = contexts
        for key in ("tool_ids", "prompts", "resources"):
            value: Any = getattr(self, key)
            # An empty tuple is the field left out; anything else is what the schema judges.
            if value != ():
                data[key] = list(value) if isinstance(value, tuple) else value
        if self.system_prompt is not None:
            data["system_prompt"] = self.system_prompt
        if self.max_tokens is not None:
            data["max_tokens"] = self.max_tokens
        if self.pin is not False:
            data["pin"] = self.pin
        return data

    @property
    def dangerous(self) -> bool:
        """Whether the risk is one that must ship ``default_state: off``."""
        return self.risk in DANGEROUS_RISKS

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any], source: str | None = None) -> Preset:
        """Validate ``mapping`` against the preset schema, then build the preset."""
        problems = preset_problems(mapping)
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
        """Build from a mapping that has already passed the schema (``from_dict``, the loader).

        The rules are the schema's alone, so checking the same mapping again
        would only cost time: the loader validates a whole file in one pass.
        Anything not yet checked goes through ``from_dict`` or the constructor.
        """
        preset = cls.__new__(cls)
        values = {
            "name": mapping["name"],
            "group": mapping.get("group"),
            "default_state": mapping["default_state"],
            "risk": mapping["risk"],
            "contexts": tuple(_freeze_pattern(p) for p in mapping["contexts"]),
            "tool_ids": tuple(mapping.get("tool_ids", ())),
            "system_prompt": mapping.get("system_prompt"),
            "source": source,
            "max_tokens": mapping.get("max_tokens"),
            "pin": mapping.get("pin", False),
            "prompts": tuple(mapping.get("prompts", ())),
            "resources": tuple(mapping.get("resources", ())),
        }
        for name, value in values.items():
            object.__setattr__(preset, name, value)
        return preset

    def to_dict(self) -> dict[str, Any]:
        """The preset as a mapping with the preset file's keys, which ``from_dict`` reads back."""
        data: dict[str, Any] = {"name": self.name}
        if self.group is not None:
            data["group"] = self.group
        data.update(
            default_state=self.default_state,
            risk=self.risk,
            contexts=[dict(p) for p in self.contexts],
        )
        for key in ("tool_ids", "prompts", "resources"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        if self.system_prompt is not None:
            data["system_prompt"] = self.system_prompt
        if self.max_tokens is not None:
            data["max_tokens"] = self.max_tokens
        if self.pin:
            data["pin"] = True
        return data


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
    prompt_ids: tuple[str, ...] = ()
    """The active presets' prompts, each once, in resolution order."""
    resource_ids: tuple[str, ...] = ()
    """The active presets' resources and resource templates, each once, in resolution order."""

    @property
    def active_names(self) -> tuple[str, ...]:
        """The names of the active presets, in order."""
        return tuple(a.name for a in self.active_presets)

    def to_dict(self) -> dict[str, Any]:
        """The resolution as plain data, ready for JSON."""
        return {
            "active_presets": [
                {"name": a.name, "reason": a.reason, "risk": a.risk} for a in self.active_presets
            ],
            "tool_ids": list(self.tool_ids),
            "prompt_fragments": [
                {"preset": f.preset, "prompt": f.prompt} for f in self.prompt_fragments
            ],
            "prompt_ids": list(self.prompt_ids),
            "resource_ids": list(self.resource_ids),
        }


# ---------------------------------------------------------------------- tools

ToolRun = Callable[[Mapping[str, Any]], Any]
ToolRunAsync = Callable[..., Awaitable[Any]]
"""``ToolDef.run``'s awaitable form: the same arguments and keywords."""
ToolCheck = Callable[[Mapping[str, Any]], None]
"""Raises ``ToolArgumentError`` for arguments the tool's input schema refuses."""


TaskSupport = Literal["optional", "required"]
"""How a tool may run as a task (the MCP tasks extension): on request, or only so."""
TASK_SUPPORT: tuple[TaskSupport, ...] = ("optional", "required")


def effective_risk(risk: Risk, annotations: Mapping[str, Any] | None) -> Risk | None:
    """What calling a tool may do: its preset's ``risk``, or None for a tool marked read-only.

    The one place the rule lives: the manager stamps it on each ``ToolDef``,
    and ``presets opencode`` computes it for tools no server has resolved yet.
    """
    return None if (annotations or {}).get("readOnlyHint") is True else risk


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
    ``output_schema`` is the JSON Schema its structured results follow (served
    as ``outputSchema``); ``accepts_context`` says ``run`` takes ``context=``
    and its handler can use it, so the server builds a call context only then.
    ``check`` validates arguments against ``input_schema`` without running
    anything (the server's pipeline checks them before it asks anyone to
    confirm the call); a ``run`` that has a ``check`` accepts ``checked=True``
    to skip checking again. ``run_async`` is set for a tool whose handler is
    async (an upstream's forward): it is ``run`` to await, and the server
    awaits it on its own loop, with no thread; ``run`` runs the same handler
    to its end for a caller without a loop.
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
    output_schema: Mapping[str, Any] | None = None
    accepts_context: bool = False
    check: ToolCheck | None = field(default=None, compare=False)
    run_async: ToolRunAsync | None = field(default=None, compare=False)
    task_support: TaskSupport | None = None
    """Whether the tool may run as a task (``ToolAdapter``'s ``task_support``)."""
