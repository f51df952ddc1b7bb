"""The one record of a tool call, and the one event-log line it makes.

The call pipeline's ``Record`` stage makes a ``CallRecord`` once a call is
over, however it ended (``server.mcp.pipeline``); a host that runs tools
itself makes the same record through ``ToolPolicy.record``. The event log
(through the policy, which counts the refusals of a spent budget), ``presets
stats``, the console and OpenTelemetry all read it. Every outcome has the
same fields, refusals included: a refused call is timed and its arguments
described as a call that ran, so its line (``line_of``) has the keys of every
other call's line (``events.CallEvent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from agent_presets.lib.principal import LOCAL

if TYPE_CHECKING:
    from agent_presets.server.events import Call, Reason, Refusal
    from agent_presets.server.events import Outcome as Decided

Outcome = Literal["ok", "error", "bad-arguments", "refused", "cancelled"]
"""How a call ended: it ran and succeeded or failed (``error``), its arguments did not
match the schema, a gate refused it (the record's ``gate`` says which), or the client
cancelled it."""


@dataclass(frozen=True)
class CallRecord:
    """The one outcome record of one tool call: the log, stats, the console and telemetry read it.

    ``principal`` is who presented the authorization (the token's name, or
    ``local``); ``reason`` is why the tool was exposed (its preset is active
    by ``context`` or by ``override``); ``confirm`` is the person's answer when
    the call waited for one; ``seconds`` is the time from the call's arrival to
    its end, refused or not. ``arguments`` and ``error`` are only described
    (names, types, lengths, the error's class), never written.
    """

    tool: str
    outcome: Outcome
    principal: str = LOCAL
    token: str | None = None
    gate: str | None = None
    preset: str | None = None
    risk: str | None = None
    reason: Reason | None = None
    confirm: Decided | None = None
    seconds: float = 0.0
    arguments: Mapping[str, Any] | None = None
    error: BaseException | None = None
    message: str | None = None
    """The error message the caller got, when there is no ``error`` to classify."""
    known: bool = True
    """Whether ``tool`` is a name an installed plugin provides (else it is the agent's text)."""
    schema: Mapping[str, Any] | None = None
    """The tool's input schema: argument names it does not declare are hashed in the log."""


_EVENTS: ModuleType | None = None


def _events() -> ModuleType:
    """``agent_presets.server.events``: the event classes load with the first line, not with
    the server; kept here after, so a line costs no import statement."""
    global _EVENTS
    from agent_presets.server import events

    _EVENTS = events
    return events


def line_of(record: CallRecord) -> Call | Refusal:
    """The record's event-log line: a ``refusal`` when a gate refused the call, else a ``call``.

    Both kinds carry the same fields. A refusal of a name no plugin provides
    (``record.known`` False) keeps only its length and a hash: the name is the
    agent's text. Argument names (and steps of an argument's path) that the
    tool's input schema (``record.schema``) does not declare are hashed for
    the same reason, and so is every name when there is no schema to ask and
    the tool is not known. Messages are never written, since they quote
    argument values: the line keeps the error's class and the argument's path.
    """
    if TYPE_CHECKING:
        from agent_presets.server import events as ev
    else:
        ev = _EVENTS or _events()
    schema = record.schema
    arguments = record.arguments
    described: dict[str, Any] = {}
    more = 0
    if arguments:
        declared: set[str] | None = None if record.known else set()
        if schema is not None:
            properties = schema.get("properties")
            declared = set(properties) if isinstance(properties, Mapping) else set()
        described, more = ev.describe_arguments(arguments, declared)
    latency = round(record.seconds * 1000, 3)
    if record.outcome == "refused":
        named: dict[str, Any] = (
            {"tool": record.tool} if record.known else ev.unknown_tool(record.tool)
        )
        return ev.Refusal(
            **named,
            gate=record.gate or "unknown",
            preset=record.preset,
            latency_ms=latency,
            args=described,
            args_more=more,
            token=record.token,
            principal=record.principal,
            outcome="refused",
            reason=record.reason,
            confirm=record.confirm,
        )
    ok = record.outcome == "ok"
    if ok:
        kind, path = None, None
    elif record.outcome == "cancelled":
        kind, path = "cancelled", None
    else:
        kind, path = ev.error_class(record.tool, record.error, record.message)
    if path is not None and schema is not None:
        path = ev.declared_path(path, schema)
    return ev.Call(
        tool=record.tool,
        preset=record.preset,
        ok=ok,
        latency_ms=latency,
        args=described,
        args_more=more,
        error=kind,
        arg=path,
        token=record.token,
        principal=record.principal,
        outcome=record.outcome,
        reason=record.reason,
        confirm=record.confirm,
    )
