"""What a tool call uses of its server: the one interface between the server and a call.

``PresetServer`` makes one ``Serving`` and hands it to everything on a
call's way: the pipeline's stages, ``presets_call`` (``discovery.py``) and
tasks (``tasks.py``). None of them holds the server, so nothing on a call's
way reaches back into it, and everything they use is here, public:

- ``open`` makes the call's one context (``PendingCall``) when the call
  arrives, with its tool resolved for its caller: the one resolution a call
  gets (``tool_for``);
- ``run`` runs an opened call through the pipeline, in its span, acting as
  its principal, marked as the principal's own call (``delivery.agent_call``);
- ``write`` hands a call's one record to the event log and to telemetry;
- the rest is what the stages ask: the policy, the confirmation, the thread
  pool, the change fanout, and what a refusal tells the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_presets.lib.principal import LOCAL, acting_as
from agent_presets.lib.schema import quote
from agent_presets.lib.suggest import did_you_mean
from agent_presets.server.delivery import agent_call
from agent_presets.server.mcp.calls import OFFLOAD_RISKS
from agent_presets.server.mcp.rounds import Rounds
from agent_presets.server.stage import PendingCall, Pipeline, Result

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.model import ToolDef
    from agent_presets.server.events import Reason
    from agent_presets.server.mcp.calls import ToolCalls
    from agent_presets.server.mcp.confirm import CallConfirmation
    from agent_presets.server.mcp.fanout import ChangeFanout
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.principals import Principals
    from agent_presets.server.record import CallRecord
    from agent_presets.server.stage import Stage
    from agent_presets.server.telemetry import Telemetry


class Serving:
    """The server's part in its calls (module docstring). Made once per server; its parts are
    the server's own objects, shared, so it holds no state of its own."""

    def __init__(
        self,
        presets: Presets,
        principals: Principals,
        *,
        policy: ToolPolicy,
        telemetry: Telemetry,
        confirmation: CallConfirmation,
        calls: ToolCalls,
        fanout: ChangeFanout,
        request_tool: str,
        chain: Callable[[Serving], Sequence[Stage]],
    ) -> None:
        """``chain`` makes the pipeline's stages for this serving (``pipeline.standard_stages``,
        with a host's own): they are given what they use of the server, and no more."""
        self.presets = presets
        self.tool_registry = presets.tool_registry
        self.principals = principals
        self.policy = policy
        self.telemetry = telemetry
        self.confirmation = confirmation
        self.calls = calls
        self.fanout = fanout
        self.request_tool = request_tool
        """The name of the tool an agent asks a person for an override with."""
        # Every tools/call passes this one chain (pipeline.py).
        self.pipeline = Pipeline(chain(self))

    # -- a call's way in and through -----------------------------------------------

    def open(
        self,
        name: str,
        arguments: dict[str, Any],
        token: str | None,
        request: Any = None,
        params: Any = None,
        *,
        stable: bool = False,
        rounds: Rounds | None = None,
    ) -> PendingCall:
        """The call's one context, made as it arrives: its tool resolved for its caller once.

        ``rounds``: what earlier rounds answered, when the caller already read
        them (a task's next round); else they are read from ``params``.
        """
        principal = token if token is not None else LOCAL
        tool = self.tool_for(name, principal)
        return PendingCall(
            name,
            arguments,
            token,
            request,
            params,
            tool,
            principal,
            reason=self.reason(tool, principal) if tool is not None else None,
            stable=stable,
            rounds=rounds if rounds is not None else Rounds.of(params),
        )

    async def run(self, call: PendingCall, chain: Pipeline | None = None) -> Result:
        """Run an opened call through the pipeline (or ``chain``), in its span.

        ``agent_call``: what the call changes is its principal's own doing;
        ``acting_as``: the handler reads ``current_principal()`` wherever it runs.
        """
        with (
            self.telemetry.tool_call(call.name, call.principal, call.token),
            agent_call(call.principal),
            acting_as(call.principal),
        ):
            return await (chain or self.pipeline)(call)

    def write(self, record: CallRecord) -> None:
        """A call's one record, to the event log (through the policy) and to telemetry."""
        self.policy.write(record)
        self.telemetry.record(record)

    # -- what the stages ask ---------------------------------------------------------

    def tool_for(self, name: str, principal: str) -> ToolDef | None:
        """The tool ``name`` as ``principal`` is served it now, or None."""
        defs = None if principal == LOCAL else self.principals.tool_defs(principal)
        if defs is None:
            return self.tool_registry.get(name)
        for tool in defs:
            if tool.name == name:
                return tool
        if name in self.presets.sync.managed():
            return None  # a preset tool of the server's, not this principal's
        return self.tool_registry.get(name)

    def reason(self, tool: ToolDef, principal: str = LOCAL) -> Reason | None:
        """Why ``tool`` is served to ``principal`` now: its preset is active by ``context`` or
        by ``override`` (None: a tool of no preset)."""
        preset = tool.preset
        if preset is None:
            return None
        resolution = (
            self.presets.manager.resolve()
            if principal == LOCAL
            else self.principals.resolution(principal)
        )
        for active in resolution.active_presets:
            if active.name == preset:
                return active.reason
        return None

    def schema_of(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of the tool an installed plugin provides as ``name`` (MCP name or
        id); None for any other name, which is the agent's own text and never logged
        (``CallRecord.known``)."""
        adapter = self.presets.tool_adapters.find(name)
        return adapter.input_schema if adapter is not None else None

    def does_io(self, tool: ToolDef) -> bool:
        """Whether ``tool`` may block on files or processes, so it runs on the thread pool.

        Its preset's risk says so, not the tool's effective risk: a read-only
        tool of a file-reading preset changes nothing but still reads files.
        """
        preset = self.presets.registry.get(tool.preset) if tool.preset is not None else None
        return preset is not None and preset.risk in OFFLOAD_RISKS

    def unavailable(self, name: str) -> str:
        """What a model reads when it calls a tool that is not in the list now."""
        from agent_presets.lib.explain import explain_tool  # only on this rare path, not at start

        presets = self.presets
        explanation = explain_tool(presets.manager, name)
        if not explanation.known:
            known = sorted(
                {presets.tool_adapters.mcp_name(a) for a in presets.tool_adapters.list()}
                | set(self.tool_registry.names())
            )
            hint = did_you_mean(name, known, "list the tools to see what is available now.")
            return f"Unknown tool {quote(name)}: no installed plugin provides it{hint}"
        if explanation.active:
            return f"Tool {name!r} is being updated; list the tools again and retry."
        text = explanation.message()
        first = explanation.presets[0].preset if explanation.presets else None
        text = text[0].upper() + text[1:] + " Only the user can set an override"
        # The agent's own way to ask for one: the request tool, which a person approves.
        text += (
            f"; ask for one with {self.request_tool} "
            f'(preset "{first}", state "on", and your reason).'
            if first is not None
            else "."
        )
        if any(v.default_state == "auto" and v.override != "off" for v in explanation.presets):
            text += " After a context change, list the tools again."
        return text
