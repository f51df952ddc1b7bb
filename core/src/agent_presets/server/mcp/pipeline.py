"""One call pipeline: every ``tools/call``, from either era and either transport.

A call arrives, is opened once (``Serving.open``: its one ``PendingCall``,
with the tool it names resolved for its caller) and passes one ordered chain
of small stages, each an object with one method, ``handle(call, call_next)``
(the shape of an ASGI stack, or of FastMCP's ``Middleware.on_call_tool``):

1. ``Record``: the outermost. Once the call is over, however it ended, it
   makes the call's one ``CallRecord`` and hands it to the event log (through
   the policy) and to OpenTelemetry (``Serving.write``). The log is what
   ``presets stats`` and the console read.
2. ``Resolve``: a name not served to this caller is the inactive-tool answer.
3. ``Gates``: the server's allow-list and the token's profile.
4. ``Budgets``: the server's and the token's call budgets (this counts the call).
5. The embedder's own stages (``PresetServer(stages=...)``), in their order.
6. ``Arguments``: the tool's input schema.
7. ``Confirm``: a person's yes for a risky call (``--confirm``), after which
   every gate above is checked again.
8. ``Run``: the handler itself.

A stage refuses by raising ``CallRefused(gate, message)``: ``Record`` turns
it into the ``isError`` result the model reads and a ``refusal`` line. The
call's facts are on the ``PendingCall``, made once and never changed; what a
stage learns of how the call ends (the outcome, the confirmation's answer,
the error) it writes on its ``ending``, and ``Record`` reads it there: one
record per call, made in one place. What a stage needs of the server is on
the ``Serving`` it was built with (``serving.py``), never the server itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from agent_presets.lib.model import PresetError, ToolArgumentError
from agent_presets.server.mcp.context import McpCallContext
from agent_presets.server.mcp.rounds import InputRequired, MissingCapability, Rounds
from agent_presets.server.mcp.wire import error_result, success_result
from agent_presets.server.policy import GateError
from agent_presets.server.record import CallRecord
from agent_presets.server.stage import CallRefused, Next, PendingCall, Pipeline, Result, Stage
from agent_presets.server.store.base import StoreUnavailableError

if TYPE_CHECKING:
    from agent_presets.server.mcp.serving import Serving

__all__ = [
    "Arguments",
    "Budgets",
    "CallRefused",
    "Confirm",
    "Gates",
    "Next",
    "PendingCall",
    "Pipeline",
    "Record",
    "Resolve",
    "Result",
    "Run",
    "Stage",
    "standard_stages",
]

log = logging.getLogger("agent_presets.server")


# --------------------------------------------------------------------- the stages


class Record:
    """Makes the call's one record once it is over, whatever ended it (module docstring)."""

    def __init__(self, serving: Serving) -> None:
        self.serving = serving

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        ending = call.ending
        try:
            result = await call_next(call)
        except CallRefused as refused:
            ending.outcome, ending.gate = "refused", refused.gate
            result = error_result(refused.message)
        except StoreUnavailableError as exc:
            # Redis down under a stage (the budget's count, a principal's state): the
            # call fails in words, as the handler's own store errors do, not as -32603.
            ending.outcome, ending.error = "error", exc
            result = error_result(str(exc))
        except asyncio.CancelledError:
            ending.outcome = "cancelled"
            self._record(call)
            raise
        except MCPError:  # a protocol error answers instead of a result (-32021)
            if ending.outcome is not None:
                self._record(call)
            raise
        if ending.outcome is not None:
            self._record(call)
        return result

    def _record(self, call: PendingCall) -> None:
        tool = call.tool
        ending = call.ending
        # A refused name no plugin provides is the agent's text: the log keeps a hash of it.
        schema = tool.input_schema if tool is not None else self.serving.schema_of(call.name)
        self.serving.write(
            CallRecord(
                tool=call.name,
                principal=call.principal,
                token=call.token,
                outcome=ending.outcome or "error",
                gate=ending.gate,
                preset=tool.preset if tool is not None else None,
                risk=tool.risk if tool is not None else None,
                reason=call.reason,
                confirm=ending.confirm,
                seconds=time.perf_counter() - call.started,
                arguments=call.arguments,
                error=ending.error,
                known=schema is not None,
                schema=schema,
            )
        )


class Resolve:
    """A name not served to this caller now (its ``tool`` is None) is the ``preset`` refusal.

    The name was resolved when the call was opened; a name the allow-lists
    hide is left to ``Gates``, so a caller learns nothing of what it may not use.
    """

    def __init__(self, serving: Serving) -> None:
        self.serving = serving

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        serving = self.serving
        if call.tool is None and serving.policy.allows(call.name, call.token):
            raise CallRefused("preset", serving.unavailable(call.name))
        return await call_next(call)


class Gates:
    """The server's allow-list and the token's profile; a name they hide is refused here."""

    def __init__(self, serving: Serving) -> None:
        self.policy = serving.policy

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        try:
            self.policy.check(call.name, call.token)
        except GateError as exc:
            raise CallRefused(exc.layer, str(exc)) from None
        # Every name the allow-lists pass either resolved or was refused by Resolve.
        assert call.tool is not None
        return await call_next(call)


class Budgets:
    """The call budgets, server-wide and the token's; a call that passes is counted.

    A call that will wait for a person is only checked here and counted when
    it may run (``Confirm``), so a denied or expired call costs no budget.
    """

    def __init__(self, serving: Serving) -> None:
        self.policy = serving.policy
        self.confirmation = serving.confirmation

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        assert call.tool is not None
        waits = self.confirmation.needed(call.tool)
        try:
            self.policy.charge(call.name, call.token, count=not waits)
        except GateError as exc:
            raise CallRefused(exc.layer, str(exc)) from None
        return await call_next(call)


class Arguments:
    """The tool's input schema, before anyone is asked to confirm a call that cannot run."""

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        assert call.tool is not None
        check = call.tool.check
        if check is not None:
            try:
                check(call.arguments)
            except ToolArgumentError as exc:
                call.ending.outcome, call.ending.error = "bad-arguments", exc
                return error_result(str(exc))
        return await call_next(call)


class Confirm:
    """A person's yes for a risky call (``--confirm``); then every gate again.

    The wait can be long: a preset may be turned off, the token revoked or a
    budget spent while the person reads the request, so an approval runs the
    call only if its tool is still served to this caller (the same tool: a
    check, the call keeps the tool it was opened with), and the call is
    counted against its budgets only then.
    """

    def __init__(self, serving: Serving) -> None:
        self.serving = serving

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        serving = self.serving
        tool = call.tool
        assert tool is not None
        confirmation = serving.confirmation
        if not confirmation.needed(tool):
            return await call_next(call)
        rounds = rounds_of(call)
        try:
            answer = await confirmation.ask(call.request, tool, call.arguments, rounds)
        except asyncio.CancelledError:
            call.ending.confirm = "withdrawn"  # ask() withdrew the request before this
            raise
        except InputRequired as asked:  # a 2026-07-28 client is asked in a round
            return asked.result()
        call.ending.confirm = answer.outcome
        if answer.refusal is not None:
            raise CallRefused("confirm", answer.refusal)
        approved = answer.request.id if answer.request is not None else "?"
        served = serving.tool_for(call.name, call.principal)
        if served is None or served.managed_source != tool.managed_source:
            message = serving.unavailable(call.name)
            raise CallRefused("preset", _approved_but(approved, call.name, message))
        try:
            serving.policy.admit(call.name, call.token)
        except GateError as exc:
            raise CallRefused(exc.layer, _approved_but(approved, call.name, str(exc))) from None
        result = await call_next(call)
        if rounds.confirmed is not None and result.get("resultType") != "input_required":
            confirmation.spend(rounds.confirmed)  # the approval ran its call: it runs no more
        return result


def _approved_but(request: str, name: str, refusal: str) -> str:
    """The refusal of an approved call whose gate closed while it waited."""
    return (
        f"{name} did not run: the user approved request {request}, but while it waited "
        f"this changed: {refusal}"
    )


class Run:
    """The handler itself, on the loop or the pool (``ToolCalls``); the last stage.

    An async handler (``ToolDef.run_async``, an upstream's forward) is awaited
    right here on the loop: no thread, so the call crosses none.
    """

    def __init__(self, serving: Serving) -> None:
        self.serving = serving

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        serving = self.serving
        tool = call.tool
        ending = call.ending
        assert tool is not None
        awaited = tool.run_async is not None
        # Built only for a handler that can receive it: other calls pay nothing.
        context = (
            McpCallContext(call.request, call.name, rounds=rounds_of(call), awaited=awaited)
            if tool.accepts_context
            else None
        )
        try:
            try:
                if awaited:
                    value = await serving.calls.run_async(
                        tool, call.arguments, context=context, checked=tool.check is not None
                    )
                else:
                    # A sync handler that takes the context runs on a thread: its notices go
                    # out while it runs, and its questions never make it run twice.
                    value = await serving.calls.run(
                        tool,
                        call.arguments,
                        offload=context is not None or serving.does_io(tool),
                        context=context,
                        checked=tool.check is not None,
                    )
            except asyncio.CancelledError:
                if context is not None:  # free a handler waiting for the client's answer
                    context.cancel()
                raise
            finally:
                if context is not None:
                    await context.flush()
            result = success_result(value)
            # A tool's own error result (an upstream's isError) is an error in the record too.
            ending.outcome = "error" if result["isError"] else "ok"
        except InputRequired as asked:  # modern era: the client answers, then calls again
            return asked.result()
        except MissingCapability as missing:  # modern era: refused, as the protocol says
            ending.outcome, ending.gate = "refused", "capability"
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=str(missing),
                data={"requiredCapabilities": missing.required},
            ) from None
        except ToolArgumentError as exc:
            ending.outcome, ending.error = "bad-arguments", exc
            result = error_result(str(exc))
        except PresetError as exc:
            ending.outcome, ending.error = "error", exc
            result = error_result(str(exc))
        except (Exception, SystemExit) as exc:  # a plugin bug must not take the server down
            log.exception("tool %s failed", call.name)
            ending.outcome, ending.error = "error", exc
            result = error_result(
                f"{call.name} failed with an internal error (the server logged the details). "
                "Do not retry it with the same arguments; tell the user it failed."
            )
        fanout = serving.fanout
        if fanout.pending:
            await fanout.settle()
        return result


def standard_stages(serving: Serving, extra: Sequence[Stage] = ()) -> list[Stage]:
    """The built-in chain, with an embedder's ``extra`` stages after the budgets."""
    return [
        Record(serving),
        Resolve(serving),
        Gates(serving),
        Budgets(serving),
        *extra,
        Arguments(),
        Confirm(serving),
        Run(serving),
    ]


def rounds_of(call: PendingCall) -> Rounds:
    """The call's rounds so far, read from its params when it was opened (``Serving.open``)."""
    rounds = call.rounds
    return rounds if isinstance(rounds, Rounds) else Rounds.of(call.params)


def arguments_of(params: Any) -> dict[str, Any]:
    arguments = getattr(params, "arguments", None)
    return dict(arguments) if isinstance(arguments, Mapping) else {}
