"""Tool adapters: the runtime half of a capability.

A preset names tool ids; an adapter turns a tool id into an MCP tool. The
handler receives the app *at call time* and fetches the runtime objects it
needs from it then, so a tool never holds on to a dead world or document.

Importing this module stays cheap: ``jsonschema`` is imported by the first
check that needs it, not here.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from agent_presets.metaschema import schema_problem
from agent_presets.model import (
    DEFAULT_NAMESPACE,
    TOOL_ID_RE,
    DuplicateToolError,
    MissingRuntimeError,
    PresetValidationError,
    ToolArgumentError,
    ToolCallError,
    ToolDef,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

Handler = Callable[..., Any]
"""``handler(app, arguments)``, or ``handler(app, arguments, call)`` to get the ``ToolCall``."""

RuntimeAction = Callable[..., Any]
"""``action(runtime, arguments)``, or ``action(runtime, arguments, call)``."""

MCP_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
ANNOTATION_KEYS = frozenset(
    {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
)


@dataclass(frozen=True)
class ToolCall:
    """What a handler may know about the call it serves, besides its arguments.

    The registry makes one per resolved tool. ``name`` is the tool's final MCP
    name, the one the client called: the registry decides it (it is where the
    host's namespace is applied), so a handler names its tool from here and
    never from a literal of its own. ``context`` is the client's call context
    (progress, logging, elicitation) when the server provides one, else None;
    later fields are added with defaults, so a handler that takes a
    ``ToolCall`` today keeps working.
    """

    name: str
    tool_id: str
    context: Any = None


@dataclass(frozen=True)
class ToolAdapter:
    """Maps a stable capability id to an MCP tool.

    ``handler(app, arguments)`` runs the tool; a handler that declares a third
    positional parameter is called ``handler(app, arguments, call)`` with the
    ``ToolCall``. ``annotations`` refine the MCP hints the server derives from
    the preset's risk (for example ``{"readOnlyHint": True}`` for a tool that
    only reads). ``ToolAdapter.for_runtime`` builds the usual kind: a tool
    that acts on one runtime object of the app.
    """

    id: str
    mcp_name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler = field(compare=False)
    annotations: Mapping[str, Any] | None = None
    source: str | None = field(default=None, compare=False)

    @classmethod
    def for_runtime(
        cls,
        id: str,
        runtime: str,
        action: RuntimeAction,
        *,
        mcp_name: str,
        description: str,
        input_schema: Mapping[str, Any],
        annotations: Mapping[str, Any] | None = None,
        errors: Sequence[type[Exception]] = (),
        source: str | None = None,
    ) -> ToolAdapter:
        """An adapter whose handler runs ``action(app.<runtime>, arguments)``.

        The runtime is fetched when the tool is called (a clear
        ``MissingRuntimeError`` when the app has none), and the runtime's own
        refusals (``errors``) become ``ToolCallError``s for the model,
        prefixed with the tool's name. That name, in both messages, is the one
        the call carries (``ToolCall.name``), so ``mcp_name`` is written here
        once and nowhere else. An ``action`` that declares a third positional
        parameter also receives the ``ToolCall``.

        Everything after ``action`` is keyword-only, so options can be added
        with defaults without breaking a caller.
        """
        where = f"tool adapter {id!r}"
        if not isinstance(runtime, str) or not runtime.isidentifier():
            raise PresetValidationError(
                f"{where}: runtime {runtime!r} must name an app attribute, like 'drawing'",
                source=source,
            )
        if not callable(action):
            raise PresetValidationError(f"{where}: action must be callable", source=source)
        caught = tuple(errors)
        if not all(isinstance(e, type) and issubclass(e, Exception) for e in caught):
            raise PresetValidationError(
                f"{where}: errors must be exception classes, got {caught!r}", source=source
            )
        return cls(
            id,
            mcp_name,
            description,
            input_schema,
            RuntimeHandler(runtime, action, caught, tool=mcp_name),
            annotations,
            source=source,
        )

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

    def __init__(
        self, app: Any = None, *, namespace_prefix: str | None = DEFAULT_NAMESPACE
    ) -> None:
        self.app = app
        self.namespace_prefix = namespace_prefix
        self._adapters: dict[str, ToolAdapter] = {}
        self._validators: dict[str, Validator] = {}
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

    def mcp_name(self, adapter: ToolAdapter) -> str:
        """The name MCP clients see for ``adapter``.

        Today that is ``adapter.mcp_name``, which carries the namespace prefix.
        It is the one place a final name is decided: ``resolve`` names the
        ``ToolDef`` and every ``ToolCall`` from it, so applying the host's
        namespace here reaches handlers' messages too.
        """
        return adapter.mcp_name

    def resolve(self, tool_id: str, app: Any = None) -> ToolDef:
        """The MCP tool for ``tool_id``; its ``run`` calls the handler with ``app``.

        ``run(arguments, context=None)``: a handler that takes a ``ToolCall``
        gets the resolved name, and the server's call context when given one.
        """
        adapter = self._adapters.get(tool_id)
        if adapter is None:
            raise PresetValidationError(
                f"no tool adapter provides tool id {tool_id!r}; install the plugin that "
                "provides it or remove it from the preset"
            )
        target = self.app if app is None else app
        # The argument validator (and jsonschema) is made by the first call, not here:
        # `presets serve` resolves every active tool before it can answer anything.
        validators: list[Validator] = []
        handler = adapter.handler
        name = self.mcp_name(adapter)
        call = ToolCall(name, adapter.id)
        with_call = takes_call(handler)

        def run(arguments: Mapping[str, Any] | None = None, *, context: Any = None) -> Any:
            # context: the server's per-call context; handlers see it as ToolCall.context.
            args = dict(arguments or {})
            if not validators:
                validators.append(self._validator(adapter))
            check_arguments(name, validators[0], args)
            if not with_call:
                return handler(target, args)
            return handler(
                target, args, call if context is None else replace(call, context=context)
            )

        return ToolDef(
            name=name,
            description=adapter.description,
            input_schema=adapter.input_schema,
            run=run,
            annotations=adapter.annotations or MappingProxyType({}),
            managed_source=adapter.id,
        )

    def _validator(self, adapter: ToolAdapter) -> Validator:
        validator = self._validators.get(adapter.id)
        if validator is None:
            import jsonschema

            validator = jsonschema.Draft202012Validator(dict(adapter.input_schema))
            self._validators[adapter.id] = validator
        return validator


def check_arguments(tool: str, validator: Validator, arguments: dict[str, Any]) -> None:
    """Raise ``ToolArgumentError`` naming the argument and what was expected.

    Non-finite numbers are refused first, wherever they are: Python's ``json``
    reads ``NaN`` and ``Infinity``, and JSON Schema's ``type: number`` (and
    every ``minimum``, since a comparison with NaN is false) lets NaN through.
    """
    non_finite = _non_finite_number(arguments)
    if non_finite is not None:
        path, value = non_finite
        raise ToolArgumentError(
            f"{tool}: {_argument(path)}: {_json_number(value)} is not a number; "
            "give a finite number"
        )
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return
    path = ".".join(str(p) for p in error.absolute_path)
    schema = validator.schema if isinstance(validator.schema, Mapping) else {}
    props = schema.get("properties", {})
    expected = ""
    if not path and props:
        required = schema.get("required", [])
        expected = f"; expected {{{', '.join(props)}}}" + (
            f" with {', '.join(required)} required" if required else ""
        )
    raise ToolArgumentError(f"{tool}: {_argument(path)}: {error.message}{expected}")


def _argument(path: str) -> str:
    return f"argument {path!r}" if path else "arguments"


def _non_finite_number(arguments: Any) -> tuple[str, float] | None:
    """The dotted path and value of a NaN or infinity in ``arguments``, or None.

    Every call runs this, so the common case (nothing found) is a plain scan
    that builds no paths; only a hit walks again to say where it is.
    """
    stack = [arguments]
    pop, push, finite = stack.pop, stack.extend, math.isfinite
    while stack:
        value = pop()
        if isinstance(value, float):
            if not finite(value):
                break
        elif isinstance(value, dict):
            push(value.values())
        elif isinstance(value, (list, tuple)):
            push(value)
    else:
        return None
    return _first_non_finite((), arguments)


def _first_non_finite(path: tuple[str, ...], value: Any) -> tuple[str, float] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return ".".join(path), value
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list | tuple)
        else ()
    )
    for key, child in children:
        found = _first_non_finite((*path, str(key)), child)
        if found is not None:
            return found
    return None


def _json_number(value: float) -> str:
    """How JSON-with-extensions (and so the caller) spells a non-finite number."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def takes_call(function: Callable[..., Any]) -> bool:
    """Whether ``function`` declares a third positional parameter, for the ``ToolCall``.

    This is how a handler (or a ``for_runtime`` action) asks for more than its
    arguments, so a two-parameter handler written before ``ToolCall`` existed
    keeps working unchanged.
    """
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional for p in parameters) >= 3


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


@dataclass(frozen=True)
class RuntimeHandler:
    """The handler ``ToolAdapter.for_runtime`` and ``runtime_handler`` build.

    Called ``handler(app, arguments, call)``, it fetches ``app.<runtime>``
    then, runs ``action`` on it, and turns the runtime's own refusals
    (``errors``) into ``ToolCallError``s prefixed with ``call.name``: the
    tool's name as the client called it. ``tool`` is only the name used when
    someone calls the handler directly, without a ``ToolCall``.
    """

    runtime: str
    action: RuntimeAction
    errors: tuple[type[Exception], ...] = ()
    tool: str | None = None
    _action_takes_call: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_action_takes_call", takes_call(self.action))

    def __call__(self, app: Any, arguments: dict[str, Any], call: ToolCall | None = None) -> Any:
        name = call.name if call is not None else (self.tool or self.runtime)
        try:
            # Inside the try: fetching a world's runtime loads its saved state, which can fail.
            runtime = require_runtime(app, self.runtime, name)
            if self._action_takes_call:
                return self.action(runtime, arguments, call or ToolCall(name, ""))
            return self.action(runtime, arguments)
        except ToolCallError:
            raise  # already written for the model, named by whoever raised it
        except self.errors as exc:
            raise ToolCallError(f"{name}: {exc}") from None


def runtime_handler(
    runtime: str,
    tool: str,
    action: RuntimeAction,
    *,
    errors: tuple[type[Exception], ...] = (),
) -> Handler:
    """A handler that fetches ``app.<runtime>`` when called and runs ``action(runtime, args)``.

    Exceptions of the ``errors`` types (a runtime's own refusals) become
    ``ToolCallError``s prefixed with the tool name, for the model to read.
    Prefer ``ToolAdapter.for_runtime``, which names the tool once: called
    through a registry, this handler names the tool as the call does, and
    ``tool`` only names it when the handler is called directly.
    """
    return RuntimeHandler(runtime, action, tuple(errors), tool=tool)


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
