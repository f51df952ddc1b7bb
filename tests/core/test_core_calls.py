"""ToolCalls: which calls wait for which, and where they run.

The calls here start in a known order (tasks start in the order they are
made, and each takes its turn before it first waits), and every check
compares the order of enter/exit events or uses a barrier that only opens
when two calls are inside at once: nothing depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.lib.adapters import ToolAdapter, ToolAdapterRegistry
from agent_presets.lib.model import PresetValidationError, ToolDef
from agent_presets.server.mcp.calls import SLOW_CALL, ToolCalls, call_scope

WAIT = 10.0  # seconds; only ever reached when a test fails


class Log:
    """Enter/exit events of calls on several threads, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self._lock = threading.Lock()
        self.entered: dict[str, threading.Event] = {}
        self.go: dict[str, threading.Event] = {}

    def add(self, event: str) -> None:
        with self._lock:
            self.events.append(event)

    def tool(
        self,
        name: str,
        runtime: str | None,
        *,
        reads: bool = False,
        hold: bool = False,
        barrier: threading.Barrier | None = None,
    ) -> ToolDef:
        """A tool that logs ``name+``/``name-``; ``hold``: it waits for ``release(name)``."""
        entered = self.entered.setdefault(name, threading.Event())
        go = self.go.setdefault(name, threading.Event())

        def run(arguments: Any) -> str:
            self.add(f"{name}+")
            entered.set()
            if barrier is not None:
                barrier.wait(WAIT)
            if hold:
                assert go.wait(WAIT), f"{name} was never released"
            self.add(f"{name}-")
            return name

        return ToolDef(
            name=name,
            description=name,
            input_schema={"type": "object"},
            run=run,
            preset="p",
            risk=None if reads else "normal",
            runtime=runtime,
        )

    def release(self, name: str) -> None:
        self.go[name].set()

    def index(self, event: str) -> int:
        return self.events.index(event)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the pool threads run meanwhile)."""
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.01)


def run(main: Callable[[ToolCalls], Coroutine[Any, Any, None]]) -> None:
    calls = ToolCalls(exclusive={"shell"})  # as the headless host declares its shell
    try:
        asyncio.run(main(calls))
    finally:
        calls.close()
    assert calls.in_flight == 0


def test_writes_to_one_runtime_never_overlap_and_run_in_arrival_order() -> None:
    log = Log()
    first, second, third = (log.tool(n, "ledger", hold=n == "w1") for n in ("w1", "w2", "w3"))

    async def main(calls: ToolCalls) -> None:
        tasks = [
            asyncio.create_task(calls.run(tool, {}, offload=True))
            for tool in (first, second, third)
        ]
        await until(lambda: log.entered["w1"].is_set() and calls.waiting == 2)
        log.release("w1")
        assert await asyncio.gather(*tasks) == ["w1", "w2", "w3"]

    run(main)
    assert log.events == ["w1+", "w1-", "w2+", "w2-", "w3+", "w3-"]


def test_calls_to_different_runtimes_run_side_by_side() -> None:
    log = Log()
    both_inside = threading.Barrier(2)
    drawing = log.tool("drawing", "drawing", barrier=both_inside)
    bash = log.tool("bash", "bash", barrier=both_inside)

    async def main(calls: ToolCalls) -> None:
        # Each waits at the barrier for the other: this only ends if they overlap.
        await asyncio.gather(
            calls.run(bash, {}, offload=True), calls.run(drawing, {}, offload=True)
        )

    run(main)
    assert sorted(log.events[:2]) == ["bash+", "drawing+"]


def test_reads_of_one_runtime_run_side_by_side() -> None:
    log = Log()
    both_inside = threading.Barrier(2)
    r1, r2 = (log.tool(n, "drawing", reads=True, barrier=both_inside) for n in ("r1", "r2"))

    async def main(calls: ToolCalls) -> None:
        await asyncio.gather(calls.run(r1, {}, offload=True), calls.run(r2, {}, offload=True))

    run(main)
    assert sorted(log.events[:2]) == ["r1+", "r2+"]


def test_a_read_waits_for_a_write_in_progress_on_its_runtime_only() -> None:
    log = Log()
    write = log.tool("write", "drawing", hold=True)
    read = log.tool("read", "drawing", reads=True)
    other = log.tool("other", "graph", reads=True)

    async def main(calls: ToolCalls) -> None:
        writing = asyncio.create_task(calls.run(write, {}, offload=True))
        await until(log.entered["write"].is_set)
        reading = asyncio.create_task(calls.run(read, {}))
        await until(lambda: calls.waiting == 1)
        assert await calls.run(other, {}) == "other"  # another runtime: no wait
        log.release("write")
        await asyncio.gather(writing, reading)

    run(main)
    assert log.events == ["write+", "other+", "other-", "write-", "read+", "read-"]


def test_a_write_queued_behind_reads_is_not_overtaken_by_later_reads() -> None:
    log = Log()
    r1 = log.tool("r1", "drawing", reads=True, hold=True)
    w = log.tool("w", "drawing")
    r2 = log.tool("r2", "drawing", reads=True)

    async def main(calls: ToolCalls) -> None:
        tasks = [asyncio.create_task(calls.run(r1, {}, offload=True))]
        await until(log.entered["r1"].is_set)
        tasks += [asyncio.create_task(calls.run(t, {}, offload=True)) for t in (w, r2)]
        await until(lambda: calls.waiting == 2)
        log.release("r1")
        await asyncio.gather(*tasks)

    run(main)
    assert log.events == ["r1+", "r1-", "w+", "w-", "r2+", "r2-"]


@pytest.mark.parametrize("runtime", ["shell", None])
def test_a_shell_or_unknown_runtime_call_waits_for_every_runtime_and_later_calls_wait_for_it(
    runtime: str | None,
) -> None:
    log = Log()
    drawing = log.tool("drawing", "drawing", hold=True)
    switch = log.tool("switch", runtime)
    graph = log.tool("graph", "graph", reads=True)

    async def main(calls: ToolCalls) -> None:
        tasks = [asyncio.create_task(calls.run(drawing, {}, offload=True))]
        await until(log.entered["drawing"].is_set)
        tasks += [
            asyncio.create_task(calls.run(switch, {})),
            asyncio.create_task(calls.run(graph, {})),
        ]
        await until(lambda: calls.waiting == 2)
        log.release("drawing")
        await asyncio.gather(*tasks)

    run(main)
    assert log.events == ["drawing+", "drawing-", "switch+", "switch-", "graph+", "graph-"]


def test_a_call_that_conflicts_with_nothing_runs_on_the_loop() -> None:
    log = Log()
    bash = log.tool("bash", "bash", hold=True)
    threads: list[threading.Thread] = []

    def note_thread(arguments: Any) -> None:
        threads.append(threading.current_thread())

    quick = ToolDef("quick", "q", {"type": "object"}, note_thread, preset="p", runtime="drawing")

    async def main(calls: ToolCalls) -> None:
        await calls.run(quick, {})  # nothing in flight
        slow = asyncio.create_task(calls.run(bash, {}, offload=True))
        await until(log.entered["bash"].is_set)
        await calls.run(quick, {})  # beside a call of another runtime
        log.release("bash")
        await slow

    run(main)
    assert threads == [threading.main_thread()] * 2


def test_two_slow_calls_in_a_row_send_a_tool_to_the_pool_but_a_slow_first_call_does_not() -> None:
    threads: list[threading.Thread] = []

    def slow(arguments: Any) -> None:
        threads.append(threading.current_thread())
        time.sleep(SLOW_CALL * 1.5)

    tool = ToolDef("slow", "s", {"type": "object"}, slow, preset="p", runtime="drawing")

    async def main(calls: ToolCalls) -> None:
        await calls.run(tool, {})  # the first call: it also does what is done once
        assert "slow" not in calls.slow
        await calls.run(tool, {})  # slow once: maybe the process was stalled
        assert "slow" not in calls.slow
        await calls.run(tool, {})
        assert "slow" in calls.slow
        await calls.run(tool, {})

    run(main)
    assert threads[:3] == [threading.main_thread()] * 3
    assert threads[3] is not threading.main_thread()


def test_one_slow_call_between_quick_ones_keeps_a_tool_on_the_loop() -> None:
    """A stall of the whole process (a profiler, the machine's load) is not a slow tool."""
    threads: list[threading.Thread] = []
    stalls = iter([False, True, False, True, False])

    def stalled(arguments: Any) -> None:
        threads.append(threading.current_thread())
        if next(stalls):
            time.sleep(SLOW_CALL * 1.5)

    tool = ToolDef("t", "s", {"type": "object"}, stalled, preset="p", runtime="drawing")

    async def main(calls: ToolCalls) -> None:
        for _ in range(5):
            await calls.run(tool, {})
        assert "t" not in calls.slow

    run(main)
    assert threads == [threading.main_thread()] * 5


def test_a_cancelled_waiting_call_gives_its_turn_up() -> None:
    log = Log()
    w1, w2, w3 = (log.tool(n, "ledger", hold=n == "w1") for n in ("w1", "w2", "w3"))

    async def main(calls: ToolCalls) -> None:
        first = asyncio.create_task(calls.run(w1, {}, offload=True))
        await until(log.entered["w1"].is_set)
        second = asyncio.create_task(calls.run(w2, {}))
        third = asyncio.create_task(calls.run(w3, {}))
        await until(lambda: calls.waiting == 2)
        second.cancel()
        log.release("w1")
        await asyncio.gather(first, third)
        with pytest.raises(asyncio.CancelledError):
            await second

    run(main)
    assert log.events == ["w1+", "w1-", "w3+", "w3-"]


def test_a_call_scope_is_its_runtime_and_whether_it_writes() -> None:
    def tool(**stamp: Any) -> ToolDef:
        return ToolDef("t", "t", {"type": "object"}, lambda a: None, **stamp)

    assert call_scope(tool(preset="p", risk=None, runtime="drawing")) == ("drawing", False)
    assert call_scope(tool(preset="p", risk="normal", runtime="drawing")) == ("drawing", True)
    assert call_scope(tool(preset="p", risk=None, runtime="shell"), {"shell"}) == (None, False)
    # Exclusive only where the app says so: the core lists no runtime of its own.
    assert call_scope(tool(preset="p", risk=None, runtime="shell")) == ("shell", False)
    assert call_scope(tool(preset="p", risk=None)) == (None, False)
    # A host's own tool (no preset stamped it read-only) writes, whatever its runtime.
    assert call_scope(tool(runtime="drawing")) == ("drawing", True)


def test_the_resolved_tool_carries_its_adapters_runtime() -> None:
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter.for_runtime(
            "drawing.clear",
            "drawing",
            lambda d, a: None,
            mcp_name="space_drawing_clear",
            description="Clear.",
            input_schema={"type": "object"},
        )
    )
    registry.register(
        ToolAdapter("app.ping", "space_app_ping", "Ping.", {"type": "object"}, lambda app, a: 1)
    )
    registry.register(
        ToolAdapter(
            "app.theme",
            "space_app_theme",
            "Theme.",
            {"type": "object"},
            lambda app, a: 1,
            runtime="shell",
        )
    )
    assert registry.resolve("drawing.clear").runtime == "drawing"
    assert registry.resolve("app.ping").runtime is None
    assert registry.resolve("app.theme").runtime == "shell"


def test_an_adapter_runtime_must_name_an_attribute_and_match_its_handler() -> None:
    from agent_presets.lib.adapters import runtime_handler

    handler = runtime_handler("drawing", "space_drawing_x", lambda d, a: None)
    adapter = ToolAdapter("drawing.x", "space_drawing_x", "X.", {"type": "object"}, handler)
    assert adapter.runtime == "drawing"  # taken from the handler, not typed twice
    with pytest.raises(PresetValidationError, match="not the runtime its handler acts on"):
        ToolAdapter(
            "drawing.x", "space_drawing_x", "X.", {"type": "object"}, handler, runtime="graph"
        )
    with pytest.raises(PresetValidationError, match="must name an app attribute"):
        ToolAdapter(
            "app.x", "space_app_x", "X.", {"type": "object"}, lambda a, b: 1, runtime="no such"
        )


CALLS = st.lists(
    st.tuples(
        st.sampled_from(["drawing", "graph", "shell", None]),  # runtime
        st.booleans(),  # reads
        st.booleans(),  # offloaded
        st.sampled_from([0.0, 0.002]),  # seconds in the handler
    ),
    min_size=2,
    max_size=7,
)


@settings(max_examples=examples(60), deadline=None)
@given(CALLS)
def test_conflicting_calls_never_overlap_and_run_in_arrival_order(
    plan: list[tuple[str | None, bool, bool, float]],
) -> None:
    log = Log()

    def tool(index: int, runtime: str | None, reads: bool, seconds: float) -> ToolDef:
        def run(arguments: Any) -> None:
            log.add(f"{index}+")
            time.sleep(seconds)
            log.add(f"{index}-")

        risk = None if reads else "normal"
        return ToolDef(str(index), "t", {}, run, preset="p", risk=risk, runtime=runtime)

    tools = [
        tool(i, runtime, reads, seconds) for i, (runtime, reads, _, seconds) in enumerate(plan)
    ]

    async def main(calls: ToolCalls) -> None:
        await asyncio.gather(
            *(
                calls.run(t, {}, offload=offload)
                for t, (_, _, offload, _) in zip(tools, plan, strict=True)
            )
        )

    run(main)

    def touches_all(runtime: str | None) -> bool:
        return runtime is None or runtime == "shell"

    for i, (runtime_i, reads_i, _, _) in enumerate(plan):
        for j in range(i + 1, len(plan)):
            runtime_j, reads_j, _, _ = plan[j]
            shared = touches_all(runtime_i) or touches_all(runtime_j) or runtime_i == runtime_j
            if shared and not (reads_i and reads_j):
                assert log.index(f"{i}-") < log.index(f"{j}+"), (plan, log.events)


def test_a_shell_call_neither_waits_for_a_hung_upstream_call_nor_holds_one_up() -> None:
    """One principal's upstream call that never answers must not delay another's switch."""
    log = Log()
    switch = log.tool("switch", "shell")

    async def main(calls: ToolCalls) -> None:
        calls.detached = frozenset({"upstream_fake"})
        hung = asyncio.Event()

        async def forward(arguments: Any, **_: Any) -> str:
            log.add("upstream+")
            await hung.wait()
            log.add("upstream-")
            return "late"

        upstream = ToolDef(
            name="up",
            description="up",
            input_schema={"type": "object"},
            run=print,
            preset="p",
            risk="filesystem-write",
            runtime="upstream_fake",
            run_async=forward,
        )
        first = asyncio.create_task(calls.run_async(upstream, {}))
        await until(lambda: "upstream+" in log.events)
        await asyncio.wait_for(calls.run(switch, {}), WAIT)  # it does not wait
        hung.set()
        await first
        hold = log.tool("hold", "shell", hold=True)
        held = asyncio.create_task(calls.run(hold, {}, offload=True))
        await until(log.entered["hold"].is_set)
        await asyncio.wait_for(calls.run_async(upstream, {}), WAIT)  # nor is it held up
        log.release("hold")
        await held

    run(main)
    # The switch ran while the upstream's call hung; the upstream's second call ran
    # while a shell call held its turn.
    assert log.events == [
        "upstream+",
        "switch+",
        "switch-",
        "upstream-",
        "hold+",
        "upstream+",
        "upstream-",
        "hold-",
    ]
