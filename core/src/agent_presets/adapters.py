"""Tool adapters: the runtime half of a capability.

A preset names tool ids; an adapter turns a tool id into an MCP tool. The
handler receives the app *at call time* and fetches the runtime objects it
needs from it then, so a tool never holds on to a dead world or document.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from agent_presets.metaschema import schema_problem
from agent_presets.model import (
    TOOL_ID_RE,
    DuplicateToolError,
    MissingRuntimeError,
    PresetValidationError,
    ToolArgumentError,
    ToolCallError,
    ToolDef,
)

Handler = Callable[[Any, dict[str, Any]], Any]

MCP_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
ANNOTATION_KEYS = frozenset(
    {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
)


@dataclass(frozen=True)
class ToolAdapter:
    """Maps a stable capability id to an MCP tool.

    ``handler(app, arguments)`` runs the tool. ``annotations`` refine the MCP
    hints the server derives from the preset's risk (for example
    ``{"readOnlyHint": True}`` for a tool that only reads).
    """

    id: str
    mcp_name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler = field(compare=False)
    annotations: Mapping[str, Any] | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        where = f"tool adapter {self.id!r}"
        if not isinstance(self.id, str) or not TOOL_ID_RE.match(self.id):
            raise PresetValidationError(
                f"tool adapter id {self.id!r} must be dotted, like 'drawing.set-tool'",
                source=self.source,
            )
        if not isinstance(self.mcp_name, str) or not MCP_NAME_RE.match(self.mcp_name):
            raise PresetValidationError(
                f"{where}: MCP name {self.mcp_name!r} must be snake_case, "
                "like 'space_drawing_undo'",
                source=self.source,
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise PresetValidationError(
                f"{where}: description must be a non-empty string", source=self.source
            )
        if not isinstance(self.input_schema, Mapping) or self.input_schema.get("type") != "object":
            raise PresetValidationError(
                f"{where}: input_schema must be a JSON Schema with type: object", source=self.source
            )
        problem = _schema_problem(self.input_schema)
        if problem is not None:
            raise PresetValidationError(
                f"{where}: input_schema is not a valid JSON Schema: {problem}",
                source=self.source,
            )
        if not callable(self.handler):
            raise PresetValidationError(f"{where}: handler must be callable", source=self.source)
        unknown = set(self.annotations or ()) - ANNOTATION_KEYS
        if unknown:
            raise PresetValidationError(
                f"{where}: unknown annotation(s) {sorted(unknown)}; use {sorted(ANNOTATION_KEYS)}",
                source=self.source,
            )
        object.__setattr__(self, "input_schema", MappingProxyType(dict(self.input_schema)))
        object.__setattr__(self, "annotations", MappingProxyType(dict(self.annotations or {})))


_checked_schemas: dict[str, str | None] = {}


def _schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not a valid 2020-12 schema, or None; memoised by content.

    Adapters are rebuilt (``dataclasses.replace``) and often share schemas, so
    each distinct schema is checked once per process (see ``metaschema``).
    """
    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        key = repr(schema)
    if key not in _checked_schemas:
        _checked_schemas[key] = schema_problem(schema)
    return _checked_schemas[key]


class ToolAdapterRegistry:
    """Stable capability ids -> adapters; resolves them into ``ToolDef``s."""

    def __init__(self, app: Any = None, *, namespace_prefix: str | None = "space_") -> None:
        self.app = app
        self.namespace_prefix = namespace_prefix
        self._adapters: dict[str, ToolAdapter] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self.version = 0

    def register(self, adapter: ToolAdapter) -> None:
        if not isinstance(adapter, ToolAdapter):
            raise PresetValidationError(
                f"expected a ToolAdapter, got {type(adapter).__name__}", source=None
            )
        existing = self._adapters.get(adapter.id)
        if existing is not None:
            raise DuplicateToolError(
                f"tool adapter {adapter.id!r} is provided twice: by {existing.source or '?'} "
                f"and by {adapter.source or '?'}; uninstall or disable one of them"
            )
        if self.namespace_prefix and not adapter.mcp_name.startswith(self.namespace_prefix):
            raise PresetValidationError(
                f"tool adapter {adapter.id!r}: MCP name {adapter.mcp_name!r} must start with "
                f"{self.namespace_prefix!r}",
                source=adapter.source,
            )
        self._adapters[adapter.id] = adapter
        self.version += 1

    def unregister(self, tool_id: str) -> None:
        self._adapters.pop(tool_id, None)
        self._validators.pop(tool_id, None)
        self.version += 1

    def get(self, tool_id: str) -> ToolAdapter | None:
        return self._adapters.get(tool_id)

    def list(self) -> list[ToolAdapter]:
        return list(self._adapters.values())

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._adapters

    def __len__(self) -> int:
        return len(self._adapters)

    def resolve(self, tool_id: str, app: Any = None) -> ToolDef:
        """The MCP tool for ``tool_id``; its ``run`` calls the handler with ``app``."""
        adapter = self._adapters.get(tool_id)
        if adapter is None:
            raise PresetValidationError(
                f"no tool adapter provides tool id {tool_id!r}; install the plugin that "
                "provides it or remove it from the preset"
            )
        target = self.app if app is None else app
        validator = self._validator(adapter)
        handler = adapter.handler
        name = adapter.mcp_name

        def run(arguments: Mapping[str, Any] | None = None) -> Any:
            args = dict(arguments or {})
            check_arguments(name, validator, args)
            return handler(target, args)

        return ToolDef(
            name=adapter.mcp_name,
            description=adapter.description,
            input_schema=adapter.input_schema,
            run=run,
            annotations=adapter.annotations or MappingProxyType({}),
            managed_source=adapter.id,
        )

    def _validator(self, adapter: ToolAdapter) -> jsonschema.protocols.Validator:
        validator = self._validators.get(adapter.id)
        if validator is None:
            validator = jsonschema.Draft202012Validator(dict(adapter.input_schema))
            self._validators[adapter.id] = validator
        return validator


def check_arguments(
    tool: str, validator: jsonschema.protocols.Validator, arguments: dict[str, Any]
) -> None:
    """Raise ``ToolArgumentError`` naming the argument and what was expected."""
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return
    path = ".".join(str(p) for p in error.absolute_path)
    where = f"argument {path!r}" if path else "arguments"
    schema = validator.schema if isinstance(validator.schema, Mapping) else {}
    props = schema.get("properties", {})
    expected = ""
    if not path and props:
        required = schema.get("required", [])
        expected = f"; expected {{{', '.join(props)}}}" + (
            f" with {', '.join(required)} required" if required else ""
        )
    raise ToolArgumentError(f"{tool}: {where}: {error.message}{expected}")


def object_schema(
    properties: Mapping[str, Any] | None = None,
    required: Sequence[str] = (),
    **extra: Any,
) -> dict[str, Any]:
    """An input schema for an object with exactly these properties.

    Unknown arguments are refused (``additionalProperties: false``), so a
    misspelt argument is an error the model sees instead of being ignored.
    """
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties or {}),
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def runtime_handler(
    runtime: str,
    tool: str,
    action: Callable[[Any, dict[str, Any]], Any],
    *,
    errors: tuple[type[Exception], ...] = (),
) -> Handler:
    """A handler that fetches ``app.<runtime>`` when called and runs ``action(runtime, args)``.

    Exceptions of the ``errors`` types (a runtime's own refusals) become
    ``ToolCallError``s prefixed with the tool name, for the model to read.
    With ``functools.partial(runtime_handler, "graph", name, errors=...)`` it
    is a decorator.
    """

    @functools.wraps(action)
    def handler(app: Any, arguments: dict[str, Any]) -> Any:
        try:
            # Inside the try: fetching a world's runtime loads its saved state, which can fail.
            return action(require_runtime(app, runtime, tool), arguments)
        except errors as exc:
            raise ToolCallError(f"{tool}: {exc}") from None

    return handler


def require_runtime(app: Any, attribute: str, tool: str) -> Any:
    """Fetch ``app.<attribute>`` now, or fail loudly naming what is missing."""
    value = getattr(app, attribute, None) if app is not None else None
    if value is None:
        raise MissingRuntimeError(
            f"{tool} requires app.{attribute}, which this app does not provide; "
            f"attach the {attribute} runtime (its plugin's presets_headless_runtime hook) "
            "or run in a host that has it"
        )
    return value
