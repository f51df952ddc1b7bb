"""What a call-pipeline stage is: the call context it gets, how it goes on, how it refuses,
and the chain stages make (``Pipeline``).

Kept apart from the pipeline's own stages (``server.mcp.pipeline``, which
import ``mcp``) so that a host's stage, and ``ServeConfig(stages=...)``, can
be written and typed without the MCP glue.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agent_presets.lib.model import ToolDef
from agent_presets.lib.principal import LOCAL

if TYPE_CHECKING:
    from agent_presets.server.events import Outcome as Decided
    from agent_presets.server.events import Reason
    from agent_presets.server.record import Outcome

Result = dict[str, Any]
"""A ``tools/call`` result in its wire form."""
Next = Callable[["PendingCall"], Awaitable[Result]]
"""What a stage calls to hand the call to the stages after it."""


class CallRefused(Exception):
    """Raised by a stage to refuse a call: ``gate`` names the stage, ``message`` is for the model.

    The message is what the calling model reads (an ``isError`` result), so it
    says what to do next; the event log keeps only the gate.
    """

    def __init__(self, gate: str, message: str) -> None:
        super().__init__(message)
        self.gate = gate
        self.message = message


@dataclass(eq=False)
class Ending:
    """How a call ended, as the stage that ended it says (``Record`` reads it once it is over)."""

    outcome: Outcome | None = None
    """None while the call is on its way, and for a call that paused (a round's question)."""
    gate: str | None = None
    confirm: Decided | None = None
    """The person's answer when the call waited for one: approved, denied, expired ..."""
    error: BaseException | None = None


@dataclass(frozen=True, eq=False)
class PendingCall:
    """One tool call on its way down the pipeline: the one context every stage gets.

    Made once, when the call arrives (``Serving.open``), and never changed:
    ``tool`` is the tool ``name`` is served as to this caller now, resolved
    then and only then (None: it is not served to this caller), and
    ``reason`` why it is served. ``principal`` is who presented the
    authorization: the token's name, or ``"local"`` without one. ``started``
    is when the call arrived; ``stable`` says its caller is served a stable
    tool list (``server.delivery``), so its result tells it what changed.
    ``request`` and ``params`` are the SDK's request context and call
    parameters, for stages that need the client (the confirmation, the call
    context). What the stages learn of how the call ends goes on ``ending``.

    A host that receives calls another way makes one with ``PendingCall(name,
    arguments, token)`` and hands it to ``PresetServer.run_call``, which opens
    it.
    """

    name: str
    arguments: dict[str, Any]
    token: str | None
    request: Any = None
    params: Any = None
    tool: ToolDef | None = None
    principal: str = LOCAL
    started: float = field(default_factory=time.perf_counter)
    reason: Reason | None = None
    stable: bool = False
    rounds: Any = None
    """What earlier rounds of a 2026-07-28 call answered (``server.mcp.rounds.Rounds``)."""
    ending: Ending = field(default_factory=Ending)

    def __post_init__(self) -> None:
        if self.token is not None and self.principal != self.token:
            object.__setattr__(self, "principal", self.token)  # frozen: set once, here


@runtime_checkable
class Stage(Protocol):
    """One step of the pipeline. Call ``call_next(call)`` to go on, or raise ``CallRefused``.

    A stage may also return a result of its own without calling on (then the
    stages after it never see the call). Stages are shared by concurrent
    calls: what a stage needs of one call is on its ``PendingCall``; guard any
    state of your own (a rate limiter's counters) for concurrent use.
    """

    async def handle(self, call: PendingCall, call_next: Next) -> Result:
        """Handle ``call``: ``return await call_next(call)``, raise ``CallRefused``, or answer."""
        ...


class Pipeline:
    """The chain of stages, built once; ``await pipeline(call)`` runs a call through it."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        if not stages:
            raise ValueError("a pipeline needs at least one stage")
        self.stages = tuple(stages)

        async def end(call: PendingCall) -> Result:
            raise RuntimeError(f"the last stage ({type(self.stages[-1]).__name__}) called on")

        step: Next = end
        for stage in reversed(self.stages):
            step = _link(stage, step)
        self._first = step

    def __call__(self, call: PendingCall) -> Awaitable[Result]:
        return self._first(call)


def _link(stage: Stage, following: Next) -> Next:
    handle = stage.handle

    def step(call: PendingCall) -> Awaitable[Result]:
        return handle(call, following)

    return step
