"""Run synchronous tool handlers for the async server: one writer per runtime, in arrival order.

Who may run beside whom. A call touches a runtime (``ToolDef.runtime``, the
app attribute its tool acts on) and reads or writes it: it reads when the
manager stamped it read-only (a preset tool with ``risk`` None, from its
``readOnlyHint``), else it writes. A call of unknown runtime, and a call to an
*exclusive* runtime, touches every runtime. Which runtimes are exclusive is
the app's to say (``exclusive_runtimes``: the headless host's ``shell`` is
one, since switching worlds changes what ``app.drawing``, ``app.scene`` and
``app.graph`` are, and a surface or activity change changes the tool list).
Two calls conflict when they touch a common runtime and one of them writes.
A *detached* runtime (``ToolCalls.detached``: an upstream MCP server's, a
process of its own) is touched only by its own tools' calls: a call that
touches every runtime (the shell's) neither waits for an upstream's call
nor holds one up, so one principal's hung upstream call never delays
another's surface switch.

A call starts only once no call that arrived before it and conflicts with it
is running or waiting. So calls that conflict run one at a time and in the
order they arrived (a write queued behind reads is not overtaken by later
reads, and a read never sees half of a write), while a call that conflicts
with nothing in flight starts at once: a slow shell command never delays a
drawing read, and reads of one runtime run side by side.

Where it runs. Most handlers edit an in-memory document in microseconds, less
than a hop to a thread costs, so a call that may start runs right on the event
loop unless the server says ``offload`` (a tool that does I/O, or whose handler
takes a call context to report or ask while it runs) or two of its calls in a
row took longer than ``SLOW_CALL``; those run on a bounded thread pool, so the loop keeps serving
other clients meanwhile. A tool's first call is not judged: it also does the
work done once (its argument validator, ``jsonschema``'s import for the first
call of all, a runtime loading its saved state), which says nothing of how
long the tool's calls take. An async handler (``ToolDef.run_async``, an
upstream's forward) takes no thread at all: ``run_async`` awaits it on the
loop, in its turn like any call.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.model import ToolDef

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("agent_presets.server")

SLOW_CALL: Final = 0.02
"""Seconds: a tool two of whose calls in a row (not its first) ran this long on the loop
runs on the pool from then on."""

POOL_SIZE: Final = 8
"""Threads for offloaded calls; calls beyond it wait for a free thread, holding their turn."""

OFFLOAD_RISKS: Final = frozenset({"filesystem-read", "filesystem-write", "shell"})


class NeedsThread(Exception):
    """A handler running on the loop asked for something it must wait for (an elicitation).

    The call context raises it before anything is sent; ``ToolCalls.run``
    runs the call again on the pool, and that tool there from then on.
    """


def call_scope(tool: ToolDef, exclusive: Collection[str] = ()) -> tuple[str | None, bool]:
    """``(runtime, writes)`` for a call of ``tool``; runtime None means every runtime.

    Unsure means exclusive: a tool the manager did not stamp read-only (a
    host's own tool, for one) writes, and one without a runtime touches all.
    """
    runtime = None if tool.runtime in exclusive else tool.runtime
    return runtime, tool.preset is None or tool.risk is not None


@dataclass(eq=False)
class _Turn:
    """One call in flight: what it touches, and whether it may start yet."""

    runtime: str | None
    writes: bool
    detached: bool = False
    started: bool = True
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    ready: asyncio.Future[None] | None = field(default=None, repr=False)

    def conflicts(self, other: _Turn) -> bool:
        if not (self.writes or other.writes):
            return False
        if self.runtime is not None and self.runtime == other.runtime:
            return True
        if self.detached or other.detached:  # touched by its own calls alone
            return False
        return self.runtime is None or other.runtime is None


class ToolCalls:
    """Runs ``ToolDef.run`` inline or on the pool, in turns (see the module docstring).

    ``_turns`` holds every call that is running off the loop, awaited, or waiting, in
    arrival order; only the loop appends, and a turn is removed when its call
    is over (on the pool thread that ran it, so a turn outlives a cancelled
    request until its thread is done). A call whose earlier turns hold no
    conflict starts; since turns are only ever removed before it, it then
    stays startable.
    """

    def __init__(self, *, exclusive: Collection[str] = (), detached: Collection[str] = ()) -> None:
        self.exclusive = frozenset(exclusive)
        self.detached = frozenset(detached)
        """Runtimes only their own tools' calls touch (the upstreams'): see the module docstring."""
        self.slow: set[str] = set()
        self._ran: set[str] = set()
        """Tools that have run once: their calls after are judged."""
        self._slow_once: set[str] = set()
        """Tools whose last call was slow: a second slow call in a row sends them to the pool."""
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._turns: list[_Turn] = []

    @property
    def in_flight(self) -> int:
        """Calls running off the loop, awaited (an async handler's), or waiting for their turn."""
        return len(self._turns)

    @property
    def waiting(self) -> int:
        """Calls waiting for their turn."""
        with self._lock:
            return sum(not turn.started for turn in self._turns)

    async def run(
        self,
        tool: ToolDef,
        arguments: dict[str, Any],
        *,
        offload: bool = False,
        context: Any = None,
        checked: bool = False,
    ) -> Any:
        """Run ``tool``; ``context`` (a call context) reaches a handler that accepts one.

        ``checked``: the arguments passed ``tool.check`` already (the pipeline checks them).
        """
        pooled = offload or tool.name in self.slow
        try:
            if not self._turns and not pooled:
                # The fast path, written out: only the loop adds turns, so none can
                # appear while this runs; a call through _inline, or a partial made
                # for it, costs measurably more.
                start = time.perf_counter()
                try:
                    if context is None and checked:
                        return tool.run(arguments, checked=True)  # type: ignore[call-arg]
                    return _bound(tool, context, checked)(arguments)
                finally:
                    self._timed(tool, time.perf_counter() - start)
            return await self._run(tool, _bound(tool, context, checked), arguments, pooled)
        except NeedsThread:
            # Asked on the loop for something it must wait for: the pool from now on.
            self.slow.add(tool.name)
            return await self._run(tool, _bound(tool, context, checked), arguments, True)

    async def run_async(
        self,
        tool: ToolDef,
        arguments: dict[str, Any],
        *,
        context: Any = None,
        checked: bool = False,
    ) -> Any:
        """Await ``tool.run_async`` on this loop, in its turn: an async handler takes no thread.

        It holds its turn while it is awaited, so writes to its runtime still
        run one at a time and in arrival order (one upstream's, for one).
        """
        run_async = tool.run_async
        assert run_async is not None
        turn = self._turn(tool, held=True)
        try:
            if turn.ready is not None:
                await turn.ready
            return await run_async(arguments, context=context, checked=checked)
        finally:
            self._release(turn)

    async def _run(
        self,
        tool: ToolDef,
        run: Callable[[dict[str, Any]], Any],
        arguments: dict[str, Any],
        pooled: bool,
    ) -> Any:
        """The call in its turn: inline once nothing conflicts, or on the pool."""
        turn = self._turn(tool, held=pooled)
        if turn.started and not pooled:
            # Nothing in flight conflicts, and nothing can be added before this returns.
            return self._inline(tool, run, arguments)
        if turn.ready is not None:
            try:
                await turn.ready
            except BaseException:  # cancelled while waiting: give the turn up
                self._release(turn)
                raise
        if not pooled:
            try:
                return self._inline(tool, run, arguments)
            finally:
                self._release(turn)
        try:
            # In the call's context: the handler reads current_principal() there too.
            future = self._pool().submit(contextvars.copy_context().run, run, arguments)
        except BaseException:
            self._release(turn)
            raise
        # Released when the thread is done, even if the request is cancelled first.
        future.add_done_callback(lambda _f: self._release(turn))
        return await asyncio.wrap_future(future)

    def _turn(self, tool: ToolDef, *, held: bool) -> _Turn:
        """``tool``'s turn: started, or waiting (``ready``) behind a call it conflicts with.

        A waiting turn joins ``_turns``, as does a ``held`` one (a call that
        leaves the loop, or is awaited); a started call that runs inline and
        returns before anything else can run needs no place there.
        """
        runtime, writes = call_scope(tool, self.exclusive)
        turn = _Turn(runtime, writes, runtime is not None and runtime in self.detached)
        with self._lock:
            if any(turn.conflicts(other) for other in self._turns):
                turn.started = False
                turn.loop = asyncio.get_running_loop()
                turn.ready = turn.loop.create_future()
            if held or not turn.started:
                self._turns.append(turn)
        return turn

    def _inline(
        self, tool: ToolDef, run: Callable[[dict[str, Any]], Any], arguments: dict[str, Any]
    ) -> Any:
        start = time.perf_counter()
        try:
            return run(arguments)
        finally:
            self._timed(tool, time.perf_counter() - start)

    def _timed(self, tool: ToolDef, seconds: float) -> None:
        """Send ``tool`` to the pool once two of its calls in a row, not its first, were slow.

        Slow is ``SLOW_CALL`` or longer. A first call pays for what is done
        once: the first call of all imports jsonschema (tens of milliseconds),
        and judged by it, the first tool called would hop to a thread on every
        call after. One slow call alone says little either: the process may
        have been stalled (the machine's load, a profiler, a collection)
        while the tool ran, and the pool is for good.
        """
        name = tool.name
        if name not in self._ran:
            self._ran.add(name)
        elif seconds <= SLOW_CALL:
            self._slow_once.discard(name)
        elif name in self._slow_once:
            log.info("tool %s is slow; it runs on the thread pool from now on", name)
            self.slow.add(name)
        else:
            self._slow_once.add(name)

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor  # made by the first pooled call

            self._executor = ThreadPoolExecutor(POOL_SIZE, thread_name_prefix="presets-tool")
        return self._executor

    def _release(self, turn: _Turn) -> None:
        """End ``turn`` and start the waiting calls that now may (any thread)."""
        start: list[_Turn] = []
        with self._lock:
            if turn not in self._turns:
                return
            self._turns.remove(turn)
            for index, waiting in enumerate(self._turns):
                if waiting.started:
                    continue
                if not any(waiting.conflicts(earlier) for earlier in self._turns[:index]):
                    waiting.started = True
                    start.append(waiting)
        for waiting in start:
            assert waiting.loop is not None and waiting.ready is not None
            try:
                waiting.loop.call_soon_threadsafe(_set_ready, waiting.ready)
            except RuntimeError:  # its loop is closed: nobody waits for this call any more
                self._release(waiting)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _bound(tool: ToolDef, context: Any, checked: bool) -> Callable[[dict[str, Any]], Any]:
    """``tool.run`` with the call's context and ``checked``, as the pool calls it."""
    if context is None and not checked:
        return tool.run
    keywords: dict[str, Any] = {"context": context} if context is not None else {}
    if checked:
        keywords["checked"] = True
    return partial(tool.run, **keywords)


def _set_ready(ready: asyncio.Future[None]) -> None:
    if not ready.done():  # a cancelled waiter has given its turn up already
        ready.set_result(None)
