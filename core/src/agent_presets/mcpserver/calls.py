"""Run synchronous tool handlers for the async server: one at a time, in arrival order.

Most handlers edit an in-memory document in microseconds, less than a hop to
a worker thread costs, so a call runs right on the event loop when nothing is
queued. Tools that do I/O (risk ``filesystem-*`` or ``shell``) and tools that
once took longer than ``SLOW_CALL`` run on one worker thread instead, so the
loop keeps serving other clients and notices meanwhile; while that worker is
busy every call queues behind it. Either way the app sees one call at a time,
in the order the calls arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from agent_presets.model import ToolDef

log = logging.getLogger("agent_presets.server")

SLOW_CALL: Final = 0.02
"""Seconds: a tool whose call ran this long on the loop runs on the worker from then on."""

OFFLOAD_RISKS: Final = frozenset({"filesystem-read", "filesystem-write", "shell"})


class ToolCalls:
    """Runs ``ToolDef.run`` inline or on the one worker thread (see the module docstring)."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._in_worker = 0
        self.slow: set[str] = set()

    async def run(self, tool: ToolDef, arguments: dict[str, Any], *, offload: bool = False) -> Any:
        if self._in_worker == 0 and not offload and tool.name not in self.slow:
            start = time.perf_counter()
            try:
                return tool.run(arguments)
            finally:
                if time.perf_counter() - start > SLOW_CALL:
                    log.info("tool %s is slow; it runs on the worker thread from now on", tool.name)
                    self.slow.add(tool.name)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="presets-tool")
        loop = asyncio.get_running_loop()
        future = self._executor.submit(tool.run, arguments)
        # Count the call until the thread has finished it, even if the request
        # is cancelled first: an inline call must never overlap it.
        self._in_worker += 1
        future.add_done_callback(lambda _f: self._finished(loop))
        return await asyncio.wrap_future(future)

    def _finished(self, loop: asyncio.AbstractEventLoop) -> None:
        def done() -> None:
            self._in_worker -= 1

        with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
            loop.call_soon_threadsafe(done)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
