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
import sys
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType, MappingProxyType
from typing import TYPE_CHECKING, Any, Final, overload

from agent_presets.lib.callcontext import CallContext, takes_context
from agent_presets.lib.metaschema import schema_problem
from agent_presets.lib.model import (
    DEFAULT_NAMESPACE,
    TASK_SUPPORT,
    TOOL_ID_RE,
    DuplicateToolError,
    MissingRuntimeError,
    PresetValidationError,
    TaskSupport,
    ToolArgumentError,
    ToolCallError,
    ToolDef,
    ToolResultError,
)
from agent_presets.lib.prompts import fill_placeholders
from agent_presets.lib.schema import clip, quote
from agent_presets.lib.schemacheck import Check, compile_check
from agent_presets.lib.toolwire import floored_hints

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
    (``agent_presets.CallContext``: progress, logging, elicitation, sampling,
    the client's capabilities) when the server provides one, else None;
    later fields are added with defaults, so a handler that takes a
    ``ToolCall`` today keeps working.
    """

    name: str
    tool_id: str
    context: CallContext | None = None


@dataclass(frozen=True, init=False)
class ToolAdapter:
    """Maps a stable capability id to an MCP tool.

    The one constructor takes the id and then keywords::

        ToolAdapter(
            "notes.append",
            runtime="notes",            # the app attribute the action gets, at call time
            action=append,              # action(notes, arguments)
            errors=(NotesError,),       # the runtime's refusals, for the model to read
            description="Append a note.",
            input_schema=object_schema({"text": {"type": "string"}}, ["text"]),
        )

    A tool that is not one runtime's gives ``handler=`` instead of
    ``runtime``/``action``/``errors``: ``handler(app, arguments)``, called
    with the app itself. A plugin whose tools share a runtime and its errors
    says them once, in an ``AdapterKit``.

    The tool's MCP name is its id with ``.`` and ``-`` as ``_``
    (``drawing.insert-shape`` is ``drawing_insert_shape``); ``name=`` gives
    another. Either way it leaves out the host's namespace: the registry that
    serves it prefixes its own (``ToolAdapterRegistry.mcp_name``). The older
    ``mcp_name=`` is the prefixed form (``space_drawing_insert_shape``), still
    accepted when it carries the registry's prefix; an adapter named the new
    way holds the same unprefixed name in ``mcp_name``.

    A handler (or an action) that declares a third positional parameter is
    called with the ``ToolCall`` too. ``annotations`` refine the MCP hints
    the server derives from the preset's risk (for example
    ``{"readOnlyHint": True}`` for a tool that only reads).

    ``runtime`` names the app attribute the tool acts on; the server runs the
    writes to one runtime one at a time, in arrival order, and calls to
    different runtimes side by side, possibly on different threads. Read-only
    tools of one runtime may run at once, so a ``readOnlyHint`` handler must
    change nothing, not even a cache. A ``handler=`` adapter may declare
    ``runtime``; left None, the server runs the tool as if it touched every
    runtime.

    ``title`` is the human name clients show (``tools/list``'s ``title``).
    ``output_schema`` is the JSON Schema of the tool's structured results
    (``outputSchema``): a dict result, or a ``results.ToolResult``'s
    ``structured`` part, is checked against it after the handler returns, and
    a mismatch is a ``ToolResultError``. ``defined_at`` is the ``(file,
    line)`` of the code that made the adapter, so a problem with it (a name
    another tool has) is reported there.

    ``task_support`` says the tool may run long enough to be worth running as
    a task (the MCP tasks extension, ``docs/tasks.md``): ``"optional"`` on a
    client that asks for tasks, ``"required"`` for a tool that only runs as
    one. Left None, the tool always answers its call directly.

    The older positional form, ``ToolAdapter(id, mcp_name, description,
    input_schema, handler, ...)``, still works and warns
    (``DeprecationWarning``).
    """

    id: str
    mcp_name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler = field(compare=False)
    annotations: Mapping[str, Any] | None = None
    source: str | None = field(default=None, compare=False)
    runtime: str | None = field(default=None, compare=False)  # like handler: it describes it
    name: str | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    defined_at: tuple[str, int] | None = field(default=None, compare=False, repr=False)
    task_support: TaskSupport | None = None

    @overload
    def __init__(
        self,
        id: str,
        *,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Handler | None = None,
        runtime: str | None = None,
        action: RuntimeAction | None = None,
        errors: Sequence[type[Exception]] = (),
        name: str | None = None,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        source: str | None = None,
        mcp_name: str | None = None,
        defined_at: tuple[str, int] | None = None,
        task_support: TaskSupport | None = None,
    ) -> None: ...

    @overload
    def __init__(  # the older positional form: deprecated
        self,
        id: str,
        mcp_name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Handler,
        /,
        annotations: Mapping[str, Any] | None = None,
        source: str | None = None,
        runtime: str | None = None,
        name: str | None = None,
        *,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> None: ...

    def __init__(
        self,
        id: str,
        *positional: Any,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        handler: Handler | None = None,
        runtime: str | None = None,
        action: RuntimeAction | None = None,
        errors: Sequence[type[Exception]] = (),
        name: str | None = None,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        source: str | None = None,
        mcp_name: str | None = None,
        defined_at: tuple[str, int] | None = None,
        task_support: TaskSupport | None = None,
    ) -> None:
        given: dict[str, Any] = {
            "description": description,
            "input_schema": input_schema,
            "handler": handler,
            "annotations": annotations,
            "source": source,
            "runtime": runtime,
            "name": name,
            "mcp_name": mcp_name,
            "task_support": task_support,
        }
        if positional:
            _positional_fields(id, positional, given)
        if defined_at is None:
            defined_at = _caller()
        self._build(id, given, action, errors, title, output_schema, defined_at)

    @classmethod
    def for_runtime(
        cls,
        id: str,
        runtime: str,
        action: RuntimeAction,
        *,
        name: str | None = None,
        mcp_name: str | None = None,
        description: str,
        input_schema: Mapping[str, Any],
        annotations: Mapping[str, Any] | None = None,
        errors: Sequence[type[Exception]] = (),
        source: str | None = None,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> ToolAdapter:
        """``ToolAdapter(id, runtime=runtime, action=action, ...)``, as it was written before.

        Kept for adapters written against it; new code calls the constructor,
        or an ``AdapterKit`` for a plugin's tools that share a runtime.
        """
        return cls(
            id,
            runtime=runtime,
            action=action,
            name=name,
            mcp_name=mcp_name,
            description=description,
            input_schema=input_schema,
            annotations=annotations,
            errors=errors,
            source=source,
            title=title,
            output_schema=output_schema,
        )

    def _build(
        self,
        id: str,
        given: dict[str, Any],
        action: RuntimeAction | None,
        errors: Sequence[type[Exception]],
        title: str | None,
        output_schema: Mapping[str, Any] | None,
        defined_at: tuple[str, int] | None,
    ) -> None:
        source: str | None = given["source"]
        runtime: str | None = given["runtime"]
        handler: Handler | None = given["handler"]
        name: str | None = given["name"]
        mcp_name: str | None = given["mcp_name"]
        where = f"tool adapter {id!r}"
        if not isinstance(id, str) or not TOOL_ID_RE.match(id):
            raise PresetValidationError(
                f"tool adapter id {id!r} must be dotted, like 'drawing.set-tool'", source=source
            )
        if name is not None and mcp_name not in (None, "", name):
            raise PresetValidationError(
                f"{where}: give its name (without the namespace prefix) as name=, "
                "or the prefixed form as mcp_name=, not both",
                source=source,
            )
        if name is None and not mcp_name:
            name = default_name(id)
        if name is not None:
            if not isinstance(name, str) or not MCP_NAME_RE.match(name):
                raise PresetValidationError(
                    f"{where}: name {name!r} must be snake_case without the namespace "
                    "prefix, like 'drawing_undo'"
                    + ("" if given["name"] is not None else "; give one with name="),
                    source=source,
                )
            mcp_name = name
        if runtime is not None and (not isinstance(runtime, str) or not runtime.isidentifier()):
            raise PresetValidationError(
                f"{where}: runtime {runtime!r} must name an app attribute, like 'drawing'",
                source=source,
            )
        if action is not None:
            handler = _runtime_handler(where, source, handler, runtime, action, errors, mcp_name)
        elif errors:
            raise PresetValidationError(
                f"{where}: errors= are the refusals of a runtime's action; give them with "
                "runtime= and action=, or catch them in the handler",
                source=source,
            )
        if handler is None:
            raise PresetValidationError(
                f"{where}: give what the tool does: runtime= and action=(runtime, arguments), "
                "or handler=(app, arguments)",
                source=source,
            )
        if runtime is None and isinstance(handler, RuntimeHandler):
            # A runtime_handler knows its runtime: the adapter does not need it typed twice.
            runtime = handler.runtime
        values = {
            "id": id,
            "mcp_name": mcp_name,
            "description": given["description"],
            "input_schema": given["input_schema"],
            "handler": handler,
            "annotations": given["annotations"],
            "source": source,
            "runtime": runtime,
            "name": name,
            "title": title,
            "output_schema": output_schema,
            "defined_at": defined_at,
            "task_support": given.get("task_support"),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)
        self._check()

    def _check(self) -> None:
        where = f"tool adapter {self.id!r}"
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
        if isinstance(self.handler, RuntimeHandler) and self.handler.runtime != self.runtime:
            raise PresetValidationError(
                f"{where}: runtime {self.runtime!r} is not the runtime its handler acts on "
                f"({self.handler.runtime!r}); leave runtime out to take the handler's",
                source=self.source,
            )
        if self.title is not None and (not isinstance(self.title, str) or not self.title.strip()):
            raise PresetValidationError(
                f"{where}: title must be a non-empty string, like 'Insert a shape'",
                source=self.source,
            )
        if self.output_schema is not None:
            if (
                not isinstance(self.output_schema, Mapping)
                or self.output_schema.get("type") != "object"
            ):
                raise PresetValidationError(
                    f"{where}: output_schema must be a JSON Schema with type: object "
                    "(structured content is an object)",
                    source=self.source,
                )
            problem = _schema_problem(self.output_schema)
            if problem is not None:
                raise PresetValidationError(
                    f"{where}: output_schema is not a valid JSON Schema: {problem}",
                    source=self.source,
                )
            object.__setattr__(self, "output_schema", MappingProxyType(dict(self.output_schema)))
        if self.task_support not in (None, *TASK_SUPPORT):
            raise PresetValidationError(
                f"{where}: task_support {self.task_support!r} must be one of "
                f"{', '.join(map(repr, TASK_SUPPORT))}, or left out for a tool that never runs "
                "as a task",
                source=self.source,
            )
        unknown = set(self.annotations or ()) - ANNOTATION_KEYS
        if unknown:
            raise PresetValidationError(
                f"{where}: unknown annotation(s) {sorted(unknown)}; use {sorted(ANNOTATION_KEYS)}",
                source=self.source,
            )
        object.__setattr__(self, "input_schema", MappingProxyType(dict(self.input_schema)))
        object.__setattr__(self, "annotations", MappingProxyType(dict(self.annotations or {})))

    @property
    def hints_trusted(self) -> bool:
        """Whether the tool's own hints stand as given (``toolwire.served_hints``).

        A handler that forwards calls to code someone else runs (an upstream
        MCP server's tool) says ``hints_trusted = False``: those hints may
        make the tool look riskier than its preset, never less.
        """
        return getattr(self.handler, "hints_trusted", True) is not False

    def served_hints(self, risk: str) -> Mapping[str, Any]:
        """The tool's own hints as a preset of ``risk`` serves them.

        An adapter a plugin ships says what its tool does, and its hints
        stand (a read-only tool of a shell preset is read-only); an upstream
        tool's are floored at the preset's risk (``toolwire.floored_hints``).
        """
        hints = self.annotations or MappingProxyType({})
        return hints if self.hints_trusted else floored_hints(risk, hints)


_POSITIONAL_FIELDS: Final = (
    "mcp_name",
    "description",
    "input_schema",
    "handler",
    "annotations",
    "source",
    "runtime",
    "name",
)
"""The fields the older form took by position, in its order."""


def _positional_fields(tool_id: object, values: Sequence[Any], given: dict[str, Any]) -> None:
    """Put the older form's positional ``values`` into ``given``, warning that it is deprecated."""
    if len(values) > len(_POSITIONAL_FIELDS):
        raise TypeError(
            f"ToolAdapter() takes the tool id and keywords; got {len(values) + 1} positional "
            "arguments"
        )
    warnings.warn(
        f"tool adapter {tool_id!r}: ToolAdapter(id, mcp_name, description, input_schema, "
        "handler) with positional fields is deprecated; pass keywords, "
        "ToolAdapter(id, description=..., input_schema=..., handler=...), and leave the "
        "name out: it defaults to the tool id",
        DeprecationWarning,
        stacklevel=3,
    )
    for key, value in zip(_POSITIONAL_FIELDS, values, strict=False):
        if given[key] is not None:
            raise TypeError(f"ToolAdapter() got {key} both by position and as a keyword")
        given[key] = value
    if given["mcp_name"] == "":
        given["mcp_name"] = None  # the older way of giving name=


def _runtime_handler(
    where: str,
    source: str | None,
    handler: Handler | None,
    runtime: str | None,
    action: RuntimeAction,
    errors: Sequence[type[Exception]],
    name: str | None,
) -> RuntimeHandler:
    """The handler of an adapter given ``runtime=`` and ``action=``, checked."""
    if handler is not None:
        raise PresetValidationError(
            f"{where}: give handler= or runtime= with action=, not both", source=source
        )
    if runtime is None:
        raise PresetValidationError(
            f"{where}: action= acts on a runtime: give runtime=, the app attribute it gets, "
            "like 'drawing'",
            source=source,
        )
    if not callable(action):
        raise PresetValidationError(f"{where}: action must be callable", source=source)
    caught = tuple(errors)
    if not all(isinstance(e, type) and issubclass(e, Exception) for e in caught):
        raise PresetValidationError(
            f"{where}: errors must be exception classes, got {caught!r}", source=source
        )
    return RuntimeHandler(runtime, action, caught, tool=name)


def _caller() -> tuple[str, int] | None:
    """``(file, line)`` of the code outside this module that is making an adapter."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


@dataclass(frozen=True)
class AdapterKit:
    """What a plugin's tools share, said once: the runtime they act on, its refusals, their ids.

    ::

        kit = AdapterKit("notes", errors=(NotesError,))


        def add_note(notes, arguments): ...


        def tool_adapters():
            return [kit.adapter(add_note, description=..., input_schema=...)]

    A tool's id is written once, in the presets that list it: ``kit.adapter(action,
    **options)`` derives it from the action's name, ``notes.add-note`` for
    ``add_note`` (``tool_id``), and is ``ToolAdapter(id, runtime=kit.runtime,
    action=action, errors=kit.errors, **options)``. ``prefix`` is the ids' first
    part when it is not the runtime's name. ``kit.adapter(id, action, ...)``
    gives the id as written, for an action whose name cannot be the tool's.
    """

    runtime: str
    errors: tuple[type[Exception], ...] = ()
    prefix: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.runtime, str) or not self.runtime.isidentifier():
            raise PresetValidationError(
                f"adapter kit: runtime {self.runtime!r} must name an app attribute, like 'drawing'"
            )
        object.__setattr__(self, "errors", tuple(self.errors))

    def tool_id(self, action: RuntimeAction) -> str:
        """The id of the tool ``action`` does: the kit's prefix, a dot, the action's name.

        The name loses its leading and trailing underscores (``_select`` and
        ``list_`` are ``select`` and ``list``) and has ``-`` for ``_``.
        """
        name = getattr(action, "__name__", "")
        verb = name.strip("_").replace("_", "-")
        tool_id = f"{self.prefix or self.runtime}.{verb}"
        if not name.isidentifier() or not TOOL_ID_RE.match(tool_id):
            raise PresetValidationError(
                f"adapter kit {self.runtime!r}: the action {name or action!r} has no name a tool "
                f"id can be made of; name its function after the tool (def add_note for "
                f"{self.prefix or self.runtime}.add-note), or give the id first: "
                "kit.adapter(id, action, ...)"
            )
        return tool_id

    def adapter(
        self,
        id: str | RuntimeAction,
        action: RuntimeAction | None = None,
        *,
        description: str,
        input_schema: Mapping[str, Any],
        name: str | None = None,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        source: str | None = None,
        task_support: TaskSupport | None = None,
    ) -> ToolAdapter:
        """The adapter of a tool: ``action(app.<runtime>, arguments)`` when it is called.

        ``adapter(action, ...)`` names the tool ``tool_id(action)``; ``adapter(id,
        action, ...)`` names it ``id``.
        """
        if action is None:
            if isinstance(id, str):
                raise TypeError(f"kit.adapter({id!r}): give the action after the tool id")
            tool_id, action = self.tool_id(id), id
        elif isinstance(id, str):
            tool_id = id
        else:
            raise TypeError("kit.adapter(action, ...) takes the action alone; its name is the id")
        return ToolAdapter(
            tool_id,
            runtime=self.runtime,
            action=action,
            errors=self.errors,
            description=description,
            input_schema=input_schema,
            name=name,
            title=title,
            output_schema=output_schema,
            annotations=annotations,
            source=source,
            task_support=task_support,
        )


_CASE_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def default_name(tool_id: str) -> str:
    """The MCP name a tool gets when its adapter gives none: the id, ``.`` and ``-`` as ``_``.

    ``drawing.set-tool`` is served as ``drawing_set_tool`` (the host prefixes
    its namespace). Every built-in tool is named this way; ``name=`` is only
    for a tool whose name should differ from its id. An upstream server's
    tool keeps its own spelling in its id, so a camelCase one is split where
    its case changes: ``everything.getTinyImage`` is ``everything_get_tiny_image``.
    """
    name = tool_id.replace(".", "_").replace("-", "_")
    return name if name.islower() or not name else _CASE_BREAK.sub("_", name).lower()


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


def mcp_name_for(adapter: ToolAdapter, namespace_prefix: str | None) -> str:
    """The rule behind ``ToolAdapterRegistry.mcp_name``, for checks made before a registry exists.

    An adapter's ``name`` gets the namespace prefixed; an older ``mcp_name``
    already carries it and is used as written.
    """
    if adapter.name is not None:
        return f"{namespace_prefix or ''}{adapter.name}"
    return adapter.mcp_name


class ToolAdapterRegistry:
    """Stable capability ids -> adapters; resolves them into ``ToolDef``s."""

    def __init__(
        self, app: Any = None, *, namespace_prefix: str | None = DEFAULT_NAMESPACE
    ) -> None:
        self.app = app
        self.namespace_prefix = namespace_prefix
        self._adapters: dict[str, ToolAdapter] = {}
        self._validators: dict[str, Validator] = {}
        self._checks: dict[str, Check] = {}
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
        if (
            adapter.name is None
            and self.namespace_prefix
            and not adapter.mcp_name.startswith(self.namespace_prefix)
        ):
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
        self._checks.pop(tool_id, None)
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
        """The name MCP clients see for ``adapter``: this registry's namespace applied.

        It is the one place a final name is decided: ``resolve`` names the
        ``ToolDef`` and every ``ToolCall`` from it, prompt placeholders are
        filled from it, and the CLI, policy and hints read it, so the host's
        namespace reaches all of them.
        """
        return mcp_name_for(adapter, self.namespace_prefix)

    def description(self, adapter: ToolAdapter) -> str:
        """``adapter``'s description with its ``{{tool.id}}`` placeholders filled in."""
        return fill_placeholders(adapter.description, self.mcp_name_of)

    def mcp_name_of(self, tool_id: str) -> str | None:
        """The final MCP name of ``tool_id``, or None when no adapter provides it."""
        adapter = self._adapters.get(tool_id)
        return None if adapter is None else self.mcp_name(adapter)

    def find(self, tool: str) -> ToolAdapter | None:
        """The adapter for a tool id or a final MCP name (the first, for a shared name)."""
        adapter = self._adapters.get(tool)
        if adapter is not None:
            return adapter
        return next((a for a in self._adapters.values() if self.mcp_name(a) == tool), None)

    def resolve(self, tool_id: str, app: Any = None) -> ToolDef:
        """The MCP tool for ``tool_id``; its ``run`` calls the handler with ``app``.

        ``run(arguments, context=None)``: a handler that takes a ``ToolCall``
        gets the resolved name, and the server's call context when given one.
        """
        adapter = self._adapters.get(tool_id)
        if adapter is None:
            from agent_presets.lib.suggest import did_you_mean

            raise PresetValidationError(
                f"no tool adapter provides tool id {tool_id!r}"
                + did_you_mean(
                    tool_id,
                    self._adapters,
                    "install the plugin that provides it or remove it from the preset",
                )
            )
        target = self.app if app is None else app
        # The argument and output checks are made by the first call, not here: `presets
        # serve` resolves every active tool before it can answer anything. The quick check
        # passes most calls; jsonschema (imported then) judges the rest.
        quick: list[Check] = []
        validators: list[Validator] = []
        outputs: list[Check] = []
        handler = adapter.handler
        name = self.mcp_name(adapter)
        call = ToolCall(name, adapter.id)
        with_call = takes_call(handler)

        def check(arguments: Mapping[str, Any]) -> None:
            args = arguments if isinstance(arguments, dict) else dict(arguments)
            if not quick:
                quick.append(self._arguments_check(adapter))
            if not quick[0](args):
                if not validators:
                    validators.append(self._validator(adapter))
                check_arguments(name, validators[0], args)

        def handler_args(
            arguments: Mapping[str, Any] | None, context: Any, checked: bool
        ) -> tuple[Any, ...]:
            """What the handler is called with: the target, the checked arguments (and call).

            ``context`` is the server's per-call context; handlers see it as ToolCall.context.
            """
            args = dict(arguments or {})
            if not checked:
                check(args)
            if not with_call:
                return (target, args)
            return (target, args, call if context is None else replace(call, context=context))

        def returned(result: Any) -> Any:
            """``result``, once it passed the tool's output schema (when it has one)."""
            if adapter.output_schema is not None:
                if not outputs:
                    outputs.append(self._output_check(adapter))
                if not outputs[0](result):
                    check_output(name, self._output_validator(adapter), result)
            return result

        def run(
            arguments: Mapping[str, Any] | None = None,
            *,
            context: Any = None,
            checked: bool = False,
        ) -> Any:
            return returned(handler(*handler_args(arguments, context, checked)))

        async def run_async(
            arguments: Mapping[str, Any] | None = None,
            *,
            context: Any = None,
            checked: bool = False,
        ) -> Any:
            return returned(await handler(*handler_args(arguments, context, checked)))

        def run_awaited(
            arguments: Mapping[str, Any] | None = None,
            *,
            context: Any = None,
            checked: bool = False,
        ) -> Any:
            return run_to_end(name, run_async(arguments, context=context, checked=checked))

        awaited = is_async_handler(handler)
        return ToolDef(
            name=name,
            description=self.description(adapter),
            input_schema=adapter.input_schema,
            run=run_awaited if awaited else run,
            annotations=adapter.annotations or MappingProxyType({}),
            managed_source=adapter.id,
            runtime=adapter.runtime,
            title=adapter.title,
            output_schema=adapter.output_schema,
            accepts_context=with_call and getattr(handler, "_action_takes_call", True),
            check=check,
            run_async=run_async if awaited else None,
            task_support=adapter.task_support,
        )

    def readiness_problem(self, tool_id: str, app: Any = None) -> str | None:
        """Why the runtime behind ``tool_id`` cannot serve calls now, or None.

        A runtime may define ``readiness() -> (ok, why)``: the shell runner
        does, reporting whether its sandbox works. The manager refuses to turn
        on a preset whose tools' runtimes are not ready, so a tool that could
        only refuse is never offered. An app with ``runtime_readiness(name)``
        answers for its runtimes itself (the headless host does, so asking
        never loads a world's saved state).
        """
        adapter = self._adapters.get(tool_id)
        runtime = getattr(adapter.handler, "runtime", None) if adapter is not None else None
        target = self.app if app is None else app
        if not isinstance(runtime, str) or target is None:
            return None
        probe = getattr(target, "runtime_readiness", None)
        if callable(probe):
            answer = probe(runtime)
        else:
            check = getattr(getattr(target, runtime, None), "readiness", None)
            answer = check() if callable(check) else None
        if answer is None or answer[0]:
            return None
        return str(answer[1])

    def _output_validator(self, adapter: ToolAdapter) -> Validator:
        key = f"{adapter.id}\0output"
        validator = self._validators.get(key)
        if validator is None:
            validator = _validator_for(dict(adapter.output_schema or {}))
            self._validators[key] = validator
        return validator

    def _arguments_check(self, adapter: ToolAdapter) -> Check:
        """A check that is True only for arguments ``check_arguments`` would pass.

        Compiled from the input schema by ``schemacheck`` (plain Python, no
        jsonschema); False means "not certain", and ``check_arguments`` then
        decides and writes the message. A schema that changes its base URI
        (``$id``) is left to jsonschema: the quick reading resolves every
        ``$ref`` against the root.
        """
        check = self._checks.get(adapter.id)
        if check is None:
            schema = plain_mapping(adapter.input_schema)
            compiled = _not_certain if _not_quick(schema) else compile_check(schema, schema)

            def check(arguments: dict[str, Any]) -> bool:
                # Unusable numbers first: JSON Schema's "number" lets NaN and 10**400 through.
                try:
                    return _unusable_number(arguments) is None and compiled(arguments)
                except RecursionError:  # nested deeper than the quick reading goes
                    return False

            self._checks[adapter.id] = check
        return check

    def _output_check(self, adapter: ToolAdapter) -> Check:
        """A check that is True only for results ``check_output`` would pass, as above.

        A result without structured content (text, an image) passes: there is
        nothing to check.
        """
        key = f"{adapter.id}\0output"
        check = self._checks.get(key)
        if check is None:
            from agent_presets.results import ToolResult

            schema = plain_mapping(adapter.output_schema or {})
            compiled = _not_certain if _not_quick(schema) else compile_check(schema, schema)

            def check(result: Any) -> bool:
                if isinstance(result, ToolResult) and result.is_error:
                    return True
                structured = result.structured if isinstance(result, ToolResult) else result
                if not isinstance(structured, Mapping):
                    return True
                try:
                    return bool(compiled(structured))
                except RecursionError:
                    return False

            self._checks[key] = check
        return check

    def _validator(self, adapter: ToolAdapter) -> Validator:
        validator = self._validators.get(adapter.id)
        if validator is None:
            validator = _validator_for(dict(adapter.input_schema))
            self._validators[adapter.id] = validator
        return validator


_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def _validator_for(schema: dict[str, Any]) -> Validator:
    """A validator of the draft ``schema`` declares (``$schema``), 2020-12 when it declares none.

    Upstream servers' schemas often declare draft-07 (every npm reference
    server does): they are read by that draft's rules, not 2020-12's.
    """
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _not_quick(schema: Mapping[str, Any]) -> bool:
    """Whether the quick reading must leave ``schema`` to jsonschema.

    One that changes its base URI (``$id``) resolves its ``$ref``s elsewhere,
    and one of another draft means some keywords otherwise (draft-07's
    ``items`` list, ``$ref`` beside other keywords).
    """
    return "$id" in str(schema) or schema.get("$schema", _DIALECT) != _DIALECT


def check_arguments(tool: str, validator: Validator, arguments: dict[str, Any]) -> None:
    """Raise ``ToolArgumentError`` naming the argument and what was expected.

    Numbers no tool can compute with are refused first, wherever they are:
    Python's ``json`` reads ``NaN`` and ``Infinity``, and JSON Schema's
    ``type: number`` (and every ``minimum``, since a comparison with NaN is
    false) lets NaN through; JSON has integers of any size, and one past a
    float's range (``10**400``) overflows the first arithmetic a tool does
    with it.
    """
    unusable = _unusable_number(arguments)
    if unusable is not None:
        path, value = unusable
        raise ToolArgumentError(f"{tool}: {_argument(path)}: {_number_problem(value)}")
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
    raise ToolArgumentError(f"{tool}: {_argument(path)}: {_problem(error)}{expected}")


def check_output(tool: str, validator: Validator, result: Any) -> None:
    """Raise ``ToolResultError`` when ``result``'s structured content breaks the output schema.

    A plain dict is the structured content, and so is a ``ToolResult``'s
    ``structured``; a result without structured content (text, an image) is
    not checked. A mismatch is the plugin's bug, not the model's: the message
    says so, so the model does not retry with other arguments.
    """
    from agent_presets.results import ToolResult

    if isinstance(result, ToolResult) and result.is_error:
        return  # an error result need not follow the output schema
    structured = result.structured if isinstance(result, ToolResult) else result
    if not isinstance(structured, Mapping):
        return
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(plain_mapping(structured)))
    if error is None:
        return
    path = ".".join(str(p) for p in error.absolute_path)
    where = f"result field {path!r}" if path else "result"
    raise ToolResultError(
        f"{tool} returned a result that does not match its output schema ({where}: "
        f"{error.message}); this is a bug in the tool's plugin. Do not retry it; tell the "
        "user it failed."
    )


def plain_mapping(value: Any) -> Any:
    """Frozen mappings and tuples to dicts and lists, for a schema check."""
    if isinstance(value, Mapping):
        return {k: plain_mapping(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_mapping(v) for v in value]
    return value


def _argument(path: str) -> str:
    # A path is made of the client's keys: quoted short, as any value it sent.
    return f"argument {quote(path, _PROBLEM_LIMIT)}" if path else "arguments"


_PROBLEM_LIMIT = 300
"""Characters of jsonschema's words an argument error keeps."""


def _problem(error: Any) -> str:
    """jsonschema's words for ``error``, with the argument's value quoted short.

    jsonschema writes the whole value (``'xxx...' is not one of [...]``): a
    3 MiB argument would come back whole in the error the model reads.
    """
    message = str(error.message)
    if len(message) <= _PROBLEM_LIMIT:
        return message
    whole = repr(error.instance)
    if whole in message:
        message = message.replace(whole, quote(error.instance))
    return clip(message, _PROBLEM_LIMIT)


def _not_certain(arguments: Any) -> bool:
    return False


LARGEST_NUMBER: Final = sys.float_info.max
"""The largest magnitude an argument's number may have: a float's, which tools compute in."""


def _unusable_number(arguments: Any) -> tuple[str, float | int] | None:
    """The dotted path and value of a NaN, an infinity or a too-large integer, or None.

    Every call runs this, so the common case (nothing found) is a plain scan
    that builds no paths; only a hit walks again to say where it is.
    """
    stack = [arguments]
    pop, push, finite, largest = stack.pop, stack.extend, math.isfinite, LARGEST_NUMBER
    while stack:
        value = pop()
        if isinstance(value, float):
            if not finite(value):
                break
        elif isinstance(value, int):
            if not -largest <= value <= largest:
                break
        elif isinstance(value, dict):
            push(value.values())
        elif isinstance(value, (list, tuple)):
            push(value)
    else:
        return None
    return _first_unusable((), arguments)


def _first_unusable(path: tuple[str, ...], value: Any) -> tuple[str, float | int] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return ".".join(path), value
    if isinstance(value, int) and not -LARGEST_NUMBER <= value <= LARGEST_NUMBER:
        return ".".join(path), value
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list | tuple)
        else ()
    )
    for key, child in children:
        found = _first_unusable((*path, str(key)), child)
        if found is not None:
            return found
    return None


def _number_problem(value: float | int) -> str:
    """What is wrong with an unusable number, told without echoing its hundreds of digits."""
    if isinstance(value, int):
        sign = "-" if value < 0 else ""
        # log10, not str(): str() of an integer past 4300 digits raises.
        size = f"{sign}10**{math.floor(math.log10(abs(value)))}"
        return f"an integer of about {size} is out of range; give a number between -1e308 and 1e308"
    spelt = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return f"{spelt} is not a number; give a finite number"


def is_async_handler(handler: Callable[..., Any]) -> bool:
    """Whether ``handler`` is async: an ``async def`` function, or an object whose call is one.

    The server awaits such a handler on its own loop (``ToolDef.run_async``).
    """
    call = getattr(type(handler), "__call__", None)  # noqa: B004 (the class's, not the object's)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


def run_to_end(name: str, coro: Coroutine[Any, Any, Any]) -> Any:
    """Run an async handler's call to its end, for a caller of the sync ``ToolDef.run``.

    Such a caller (a host's own thread, the test harness) has no loop of its
    own; one that has must await ``run_async`` instead, since waiting here
    would stop the very loop the handler needs.
    """
    import asyncio  # only async handlers need it, and only here

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ToolCallError(
        f"{name}: its handler is async and this thread runs an event loop; "
        "await the tool's run_async instead of calling run"
    )


def takes_call(function: Callable[..., Any]) -> bool:
    """Whether ``function`` declares a third positional parameter, for the ``ToolCall``.

    This is how a handler (or a ``for_runtime`` action) asks for more than its
    arguments, so a two-parameter handler written before ``ToolCall`` existed
    keeps working unchanged.
    """
    return takes_context(function)


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


def result_schema(
    properties: Mapping[str, Any],
    optional: Sequence[str] = (),
    **extra: Any,
) -> dict[str, Any]:
    """An output schema for a result object that always carries these properties.

    Every property is required except the ``optional`` ones (fields a result
    has only sometimes). Other keys are not refused, unlike ``object_schema``:
    a result that gains a field should not break the tool that returns it.
    """
    unknown = [name for name in optional if name not in properties]
    if unknown:
        raise ValueError(f"optional names no property: {', '.join(unknown)}")
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    required = [name for name in properties if name not in optional]
    if required:
        schema["required"] = required
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
