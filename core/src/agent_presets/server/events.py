"""The event log: one versioned line schema, one bounded and private file.

Every writer (tool calls, refusals, the console's decisions and changes,
agents' requests, tokens) builds one of the event classes below and hands it
to an ``EventLog``; every reader (``presets stats``, the console) calls
``read_events``. ``docs/events.md`` documents the schema.

What the log promises, and where the code keeps each promise:

- *One schema.* Each kind is a frozen dataclass; ``Event.to_json`` writes
  exactly its fields plus ``v``, ``kind`` and ``ts``, so a writer cannot
  invent a field, and ``check_event`` validates a line against the same
  dataclasses.
- *Bounded.* Every string is clipped to ``MAX_TEXT`` characters when the line
  is written (``clip``); argument descriptions list at most ``MAX_ARGS``
  names; the file rotates at ``max_bytes`` and keeps ``backups`` old files.
- *Private.* The file is created mode 0600 and an existing one is chmod-ed
  to 0600 when opened; it is opened with ``O_NOFOLLOW``.
- *No agent text.* Argument values never reach a line: ``describe_arguments``
  keeps names, JSON types and lengths. Error messages never reach a line
  either (they quote values): a call records the error's class and, for an
  argument error, the argument's path.
"""

from __future__ import annotations

import hashlib
import time
import types
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from agent_presets.lib.model import PresetError

# The file's side lives in eventlog, so a server opens its log without these classes.
from agent_presets.server.eventlog import DEFAULT_BACKUPS as DEFAULT_BACKUPS
from agent_presets.server.eventlog import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from agent_presets.server.eventlog import EventLog as EventLog
from agent_presets.server.eventlog import encode as encode
from agent_presets.server.eventlog import json_string, json_text
from agent_presets.server.eventlog import read_events as read_events
from agent_presets.server.eventlog import rotated_paths as rotated_paths
from agent_presets.server.eventlog import verify_log as verify_log

SCHEMA_VERSION = 1
MAX_TEXT = 200
"""Longest string (in characters) written in any field; longer ones are clipped."""
MAX_ARGS = 32
"""Most argument names described on one ``call`` line; the rest are counted."""

State = Literal["auto", "on", "off"]
Asks = Literal["override", "call"]
Outcome = Literal["approved", "denied", "expired", "withdrawn"]
CallOutcome = Literal["ok", "error", "bad-arguments", "cancelled", "refused"]
Reason = Literal["context", "override"]


def now() -> float:
    """Seconds since the epoch (UTC), to the millisecond: the ``ts`` of every line."""
    return round(time.time(), 3)


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` if short enough, else its first ``limit`` characters and a marker.

    The marker says how long the original was, so a reader can tell a clipped
    name from a name that happens to end in an ellipsis.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text)} chars]"


def unknown_tool(name: str) -> dict[str, Any]:
    """The ``Refusal`` fields that stand for ``name``, a tool no plugin provides.

    Its length and a short hash: enough to see one name tried a thousand
    times, or a thousand names tried once, without keeping what the agent
    wrote (``docs/events.md``: the log holds no free text from the agent).
    """
    return {"tool": None, "tool_len": len(name), "tool_sha256": _digest(name)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def undeclared(name: str) -> str:
    """How a line writes a name the tool's schema does not declare: ``sha256:`` and 12 hex.

    An argument the schema does not name, or a key inside a free-form object
    (a graph node's ``data``), was chosen by the agent: its text stays out.
    """
    return f"sha256:{_digest(name)}"


def declared_path(path: str, schema: Mapping[str, Any] | None) -> str:
    """``path`` (``points.3.x``) with every step the schema does not declare made ``undeclared``.

    A step is declared when the schema at that depth lists it in
    ``properties``, or it is an index into an array; once a step is not,
    nothing below it is either.
    """
    node: Any = schema
    steps = []
    for step in path.split(".") if path else ():
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if isinstance(properties, Mapping) and step in properties:
            node = properties[step]
        elif step.isdigit() and isinstance(node, Mapping) and "items" in node:
            node = node["items"]
        elif step.isdigit():
            node = None
        else:
            step, node = undeclared(step), None
        steps.append(step)
    return ".".join(steps)


# --------------------------------------------------------------------- arguments


@dataclass(frozen=True)
class ArgShape:
    """What the log keeps of one argument value: its JSON type and its length."""

    type: Literal["string", "number", "integer", "boolean", "null", "array", "object"]
    len: int | None = None
    """Characters of a string, items of an array, keys of an object; null otherwise."""


def shape_of(value: Any) -> ArgShape:
    if isinstance(value, str):
        return ArgShape("string", len(value))
    if isinstance(value, bool):
        return ArgShape("boolean")
    if isinstance(value, int):
        return ArgShape("integer")
    if isinstance(value, float):
        return ArgShape("number")
    if value is None:
        return ArgShape("null")
    if isinstance(value, Mapping):
        return ArgShape("object", len(value))
    if isinstance(value, list | tuple):
        return ArgShape("array", len(value))
    # Not JSON: say so by its nearest JSON type rather than its Python repr.
    return ArgShape("object")


def describe_arguments(
    arguments: Mapping[str, Any], declared: Collection[str] | None = None
) -> tuple[dict[str, ArgShape], int]:
    """The names, types and lengths of ``arguments`` (never their values).

    Returns at most ``MAX_ARGS`` entries and the count of the ones left out, so
    a call with ten thousand arguments still makes a short line. Given the
    names the tool's schema ``declared``, any other name is written
    ``undeclared``: the agent made it up.
    """
    described: dict[str, ArgShape] = {}
    for name, value in arguments.items():
        if len(described) == MAX_ARGS:
            break
        text = str(name)
        key = clip(text) if declared is None or text in declared else undeclared(text)
        described[key] = shape_of(value)
    return described, len(arguments) - len(described)


def error_class(
    tool: str, exc: BaseException | None, message: str | None
) -> tuple[str, str | None]:
    """What a ``call`` line keeps of an error: its class name and the argument's path.

    The message itself is never kept: argument errors quote the value
    (``'sk-...' is not one of ...``) and handlers' errors quote paths. An
    exception that is not a ``PresetError`` is a bug in a plugin: ``internal``.
    Given only a message, the class is ``error``, unless the message has the
    form ``check_arguments`` gives argument errors (``TOOL: argument 'a.b': ...``)
    or the server's ``internal error: ...``.
    """
    if exc is not None:
        if not isinstance(exc, PresetError):
            return "internal", None
        return type(exc).__name__, _argument_path(tool, message or str(exc))
    text = message or ""
    if text.startswith("internal error: "):
        return "internal", None
    path = _argument_path(tool, text)
    return ("ToolArgumentError" if path is not None else "error"), path


def _argument_path(tool: str, message: str) -> str | None:
    prefix = f"{tool}: argument "
    if not message.startswith(prefix) or len(message) < len(prefix) + 2:
        return None
    rest = message[len(prefix) :]
    quote = rest[0]
    if quote not in "'\"":
        return None
    end = rest.find(f"{quote}: ", 1)
    if end < 0:
        return None
    literal = rest[: end + 1]
    if "\\" not in literal:
        return literal[1:-1]
    import ast  # only for a path whose repr has escapes: rare

    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------- events


@dataclass(frozen=True, kw_only=True)
class Event:
    """Fields every line has besides ``v`` and ``kind``."""

    KIND: ClassVar[str] = ""
    ts: float = field(default_factory=now)
    """When it happened: seconds since the epoch, UTC."""
    token: str | None = None
    """The name of the token the session authenticated with; null without one."""

    def to_json(self) -> dict[str, Any]:
        """The line's object: ``v``, ``kind``, then every field, strings clipped."""
        line: dict[str, Any] = {"v": SCHEMA_VERSION, "kind": self.KIND}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            # Short strings and plain scalars as they are (most fields): no call per field.
            kind = type(value)
            if kind is str:
                line[name] = value if len(value) <= MAX_TEXT else clip(value)
            elif value is None or kind is bool or kind is int or kind is float:
                line[name] = value
            else:
                line[name] = _plain(value)
        return line

    def to_text(self) -> str:
        """The JSON text of ``to_json()`` as the log writes it, built without the object.

        Every tools/call writes a line: the fields go straight to text (a
        scalar by its exact type, anything else through ``_plain`` and the
        log's encoder), which costs about half of building the object and
        encoding it. ``encode`` uses it; a test holds the two equal.
        """
        cls = type(self)
        keys = _TEXT_KEYS.get(cls)
        if keys is None:
            keys = _TEXT_KEYS[cls] = tuple(
                (f",{json_string(name)}:", name) for name in _field_names(cls)
            )
        values = self.__dict__
        parts = [f'{{"v":{SCHEMA_VERSION},"kind":{json_string(self.KIND)}']
        add = parts.append
        for key, name in keys:
            value = values[name]
            kind = type(value)
            if kind is str:
                add(key + json_string(value if len(value) <= MAX_TEXT else clip(value)))
            elif value is None:
                add(key + "null")
            elif kind is bool:
                add(key + ("true" if value else "false"))
            elif kind is int:
                add(key + int.__repr__(value))
            elif kind is float and -_INF < value < _INF:  # not NaN, not infinite
                add(key + float.__repr__(value))
            elif kind is dict and not value:  # a call without arguments: no encoder call
                add(key + "{}")
            else:
                add(key + json_text(_plain(value)))
        add("}")
        return "".join(parts)


class _Checked:
    """Checks the whole line when built: for the rare kinds whose fields are enums."""

    def __post_init__(self) -> None:
        assert isinstance(self, Event)
        check_event(self.to_json())


@dataclass(frozen=True, kw_only=True)
class CallEvent(Event):
    """The fields of every line a tool call makes, whether it ran or a gate refused it.

    A call has one record (``server.record.CallRecord``) with the same fields
    for every outcome, and so its two kinds of line have the same keys: a
    refusal is timed and its arguments described as a call that ran.
    """

    tool: str | None
    """The MCP tool name; on a refusal ``"*"`` for a summary of the server-wide budget, and
    null for a name no installed plugin provides."""
    tool_len: int | None = None
    """Characters of an unknown tool's name; null when ``tool`` is given."""
    tool_sha256: str | None = None
    """The first 12 hex digits of the SHA-256 of an unknown tool's name (UTF-8)."""
    preset: str | None = None
    """The active preset that provides the tool, where known."""
    ok: bool = False
    """Whether it ran and succeeded."""
    latency_ms: float = 0.0
    """Time from receiving the call to its result (its refusal, for a refused call)."""
    args: dict[str, ArgShape] = field(default_factory=dict)
    args_more: int = 0
    """How many further arguments the call had beyond the ``MAX_ARGS`` described."""
    error: str | None = None
    """The error's class name (``ToolArgumentError``, ``internal`` ...); null when ok."""
    arg: str | None = None
    """For an argument error, the path of the argument at fault (``points.3.x``)."""
    gate: str | None = None
    """The layer that refused: ``allow-list``, ``budget``, ``preset`` ...; null on a call."""
    count: int = 1
    """Calls this line stands for; above 1 on a summary of a spent budget's refusals."""
    principal: str | None = None
    """Who presented the authorization: the token's name, or ``local``."""
    outcome: CallOutcome | None = None
    """How it ended: ``ok``, ``error``, ``bad-arguments``, ``cancelled``, or ``refused``."""
    reason: Reason | None = None
    """Why the tool was served: its preset is active by ``context`` or by ``override``."""
    confirm: Outcome | None = None
    """The person's answer when the call waited for one (``--confirm``)."""


@dataclass(frozen=True, kw_only=True)
class Call(CallEvent):
    """A tool call that ran (it passed every gate), successfully or not."""

    KIND: ClassVar[str] = "call"
    tool: str
    ok: bool
    latency_ms: float


@dataclass(frozen=True, kw_only=True)
class Refusal(CallEvent):
    """One or more calls a gate refused before they ran.

    A name no installed plugin provides is the agent's own text, so it is not
    kept: ``tool`` is null, and ``tool_len`` and ``tool_sha256`` let a reader
    tell one unknown name from another, and count them (``unknown_tool``).
    """

    KIND: ClassVar[str] = "refusal"
    gate: str


@dataclass(frozen=True, kw_only=True)
class Request(_Checked, Event):
    """An agent asked for a change or a call that waits for the user."""

    KIND: ClassVar[str] = "request"
    id: str
    asks: Asks
    preset: str | None = None
    state: State | None = None
    tool: str | None = None
    principal: str | None = None
    """Who asked: the token's name, or ``local``."""


@dataclass(frozen=True, kw_only=True)
class Decision(_Checked, Event):
    """A pending request was decided (by a person, or by its expiry)."""

    KIND: ClassVar[str] = "decision"
    id: str
    asks: Asks
    outcome: Outcome
    by: str
    """Who decided: ``console``, ``cli``, ``elicitation``, ``timeout`` ..."""
    preset: str | None = None
    tool: str | None = None


@dataclass(frozen=True, kw_only=True)
class Change(_Checked, Event):
    """A preset's override changed on a running server."""

    KIND: ClassVar[str] = "change"
    preset: str
    state: State
    previous: State | None = None
    by: str
    """Who changed it: ``cli``, ``console``, ``agent``, ``approval`` ..."""
    principal: str | None = None
    """Whose state it is: the token's name, ``local``; null for a server-wide change."""


@dataclass(frozen=True, kw_only=True)
class ContextChange(Event):
    """The host's context changed on a running server, by a person (not an agent's call)."""

    KIND: ClassVar[str] = "context"
    fields: dict[str, str | bool | None]
    """The fields that changed, with their new values (declared values: no free text)."""
    by: str
    """Who changed it: ``cli`` (``presets context set``), ``console`` ..."""
    principal: str | None = None
    """Whose state it is: the token's name, ``local``; null for a server-wide change."""


_FIELD_NAMES: dict[type[Event], tuple[str, ...]] = {}
_TEXT_KEYS: dict[type[Event], tuple[tuple[str, str], ...]] = {}
"""Per kind: each field's ``,"name":`` and its name, for ``to_text``."""
_INF = float("inf")


def _field_names(cls: type[Event]) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


KINDS: dict[str, type[Event]] = {
    k.KIND: k for k in (Call, Refusal, Request, Decision, Change, ContextChange)
}


def _plain(value: Any) -> Any:
    """``value`` as JSON data with every string clipped (keys included)."""
    # Exact type checks first: this runs for every field of every line.
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_TEXT else clip(value)
    if kind is bool or kind is int or kind is float or value is None:
        return value
    if kind is ArgShape:
        return {"type": value.type, "len": value.len}
    if isinstance(value, str):
        return clip(str(value))
    if isinstance(value, Mapping):
        return {clip(str(k)): _plain(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------- checking


class EventSchemaError(ValueError):
    """A line does not match the schema of its kind."""


def check_event(line: Mapping[str, Any]) -> None:
    """Raise ``EventSchemaError`` unless ``line`` is a valid event of this schema version.

    The check is derived from the dataclasses above, so the schema lives once.
    """
    if line.get("v") != SCHEMA_VERSION:
        raise EventSchemaError(f"v must be {SCHEMA_VERSION}, got {line.get('v')!r}")
    kind = line.get("kind")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise EventSchemaError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    extra = set(line) - names - {"v", "kind", "prev"}
    missing = names - set(line)
    if extra or missing:
        raise EventSchemaError(
            f"{kind} line: unexpected fields {sorted(extra)}, missing fields {sorted(missing)}"
        )
    for name in names:
        _check_value(f"{kind}.{name}", line[name], hints[name])


def _check_value(where: str, value: Any, hint: Any) -> None:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                _check_value(where, value, option)
            except EventSchemaError:
                continue
            return
        raise EventSchemaError(f"{where}: {value!r:.60} is not {hint}")
    if origin is Literal:
        if value not in get_args(hint):
            raise EventSchemaError(f"{where}: {value!r:.60} is not one of {get_args(hint)}")
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise EventSchemaError(f"{where}: expected an object")
        _, item = get_args(hint)
        for key, sub in value.items():
            _check_text(f"{where}.key", key)
            _check_value(f"{where}[{key!r:.60}]", sub, item)
        return
    if hint is ArgShape:
        if not isinstance(value, dict) or set(value) != {"type", "len"}:
            raise EventSchemaError(f"{where}: expected {{type, len}}")
        arg_hints = get_type_hints(ArgShape)
        for name in ("type", "len"):
            _check_value(f"{where}.{name}", value[name], arg_hints[name])
        return
    if hint is type(None):
        if value is not None:
            raise EventSchemaError(f"{where}: expected null")
    elif hint is str:
        _check_text(where, value)
    elif hint is bool:
        if not isinstance(value, bool):
            raise EventSchemaError(f"{where}: expected a boolean")
    elif hint is int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise EventSchemaError(f"{where}: expected a non-negative integer")
    elif hint is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise EventSchemaError(f"{where}: expected a number")
    else:  # pragma: no cover - a field type this checker does not know is a bug here
        raise TypeError(f"{where}: no check for {hint!r}")


def _check_text(where: str, value: Any) -> None:
    if not isinstance(value, str):
        raise EventSchemaError(f"{where}: expected a string")
    tail = value[MAX_TEXT:]
    if tail and not (tail.startswith("…[") and tail.endswith(" chars]")):
        raise EventSchemaError(f"{where}: a string of {len(value)} characters was not clipped")
