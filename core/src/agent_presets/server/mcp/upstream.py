"""Upstream MCP servers, running: started on first need, their calls forwarded.

``UpstreamHub`` is the app's ``upstreams`` runtime (``agent_presets.lib.upstreams.RUNTIME``):
every upstream tool's handler calls ``hub.call(upstream, tool, arguments, call)``
at call time, so the calls pass the server's whole pipeline (allow-lists,
tokens, budgets, ``--confirm``, the event log) before they get here, as any
tool's do.

The hub runs its upstream clients on the server's event loop, which it
adopts at the server's first list or call. A forwarded call's handler is
async, and the server awaits it on that loop: the call, its progress and log
notices (passed to the caller's client through the call context as they
arrive) and its result cross no thread. A hub that had to start before the
server's loop ran (``serve --upstreams-at-start``, ``presets upstreams
snapshot``) runs them on a loop of its own thread instead, and a call
crosses to it and back. A cancelled call cancels its upstream request,
which the SDK tells the upstream (``notifications/cancelled``).

An upstream starts lazily: on the first call of one of its tools, or on the
first ``tools/list`` while presets wait for its tools (it has no current
snapshot), or at once with ``serve --upstreams-at-start``. Its
``tools/list_changed`` imports its tools again. A crash or a hang is a tool
error naming the upstream, and the next call restarts it, after a backoff
that doubles with each failure in a row. A command upstream runs under
``upstream_guard.py``, which ends its whole process group when the server
dies, however it dies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_presets.lib.adapters import ToolCall
from agent_presets.lib.model import PresetError, PresetValidationError, ToolCallError
from agent_presets.lib.safetext import shown
from agent_presets.lib.upstreams import (
    RUNTIME,
    Launch,
    Snapshot,
    Upstream,
    UpstreamConfigError,
    UpstreamSet,
    UpstreamTool,
    adapters_for,
)
from agent_presets.results import Content, ToolResult
from agent_presets.server.mcp.upstream_stdio import (
    NOTICE_BURST,
    NOTICE_RATE,
    Bounds,
    stdio_transport,
)

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets

log = logging.getLogger("agent_presets.server")

GUARD: Final = str(Path(__file__).with_name("upstream_guard.py"))
GUARD_PREFIX: Final = "upstream_guard: "
"""How the guard's own stderr line starts (it says how the command ended)."""
BACKOFF_FIRST: Final = 0.5
BACKOFF_MAX: Final = 30.0
STDERR_TAIL: Final = 300
READY_WAIT: Final = 5.0
"""Seconds a request waits, once, for an upstream's first start (a cold ``npx -y`` takes
about 5 s); after that its tools are served when they come, and no request waits."""
MAX_TOOLS: Final = 1000
"""Tools an upstream may list; one that lists more is refused (it does not start)."""
LOG_LEVEL: Final = "info"
"""The level an upstream with the logging capability is asked to log at (``logging/setLevel``)."""


class UpstreamUnavailable(ToolCallError):
    """An upstream could not serve a call: it did not start, crashed or hung."""


@dataclass
class _Event:
    """What the upstream sent back for one call: a progress notice, a log message, or the end."""

    kind: str
    value: Any = None


def client_capabilities(upstream: Upstream) -> dict[str, Any]:
    """The capabilities this server declares to ``upstream`` (recorded in its snapshot).

    No sampling or elicitation (an upstream cannot reach the person or the
    model through this server), and roots only when the declaration gives them.
    """
    return {"roots": {"listChanged": True}} if upstream.roots is not None else {}


class _WatchedStream:
    """A transport's read stream that sets ``ended`` when the upstream's side closes.

    The SDK's session does not say when its upstream went away between
    requests; this does, so a crashed upstream is restarted by the next call
    instead of failing it.
    """

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._ended.set()
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


class Connection:
    """One upstream: its client while it runs, and how it failed when it does not.

    Lives on the hub's loop; every method but ``rehome`` (the hub's, when it moves) runs there.
    """

    def __init__(self, hub: UpstreamHub, upstream: Upstream) -> None:
        self.hub = hub
        self.upstream = upstream
        self.name = upstream.name
        self.client: Client | None = None
        self.tools: list[UpstreamTool] = []
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.protocol_version: str | None = None
        self.failures = 0
        self.retry_at = 0.0
        self.last_error: str | None = None
        self.starts = 0
        self.listed = False
        """Whether it has listed its tools once, since the server started."""
        self._start_lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._stderr: TextIO | None = None
        self.listeners: set[Callable[[_Event], None]] = set()
        """The calls in flight, each told the upstream's log messages (on this loop)."""
        self.lists = 0
        """Times it was asked for its tool list (a start, a relist)."""
        self.bounds = Bounds(self.name)
        """What its transport dropped, and why it cut the connection (``upstream_stdio``)."""
        self.ready_by = 0.0
        """Until when (monotonic) requests wait for its first start; 0 before it began."""
        self._relisting: asyncio.Task[None] | None = None
        self._relist_again = False

    def rehome(self) -> None:
        """Forget the client of a loop that is gone: the next need starts it on the hub's new one.

        Its process ended with that loop (the SDK closes it, shielded, when
        the loop cancels its task).
        """
        self.client = None
        self._runner = None
        self._start_lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()

    # -- starting and stopping ------------------------------------------------

    async def ensure(self) -> Client:
        """The running client, starting the upstream first if it is not running."""
        if self.client is not None and not self._ended.is_set():
            return self.client
        async with self._start_lock:
            if self.client is not None and not self._ended.is_set():
                return self.client
            if self.client is not None:  # it went away since the last call
                await self._teardown()
                self._failed("it exited" + self._stderr_tail())
            wait = self.retry_at - time.monotonic()
            if wait > 0:
                raise UpstreamUnavailable(
                    f"upstream {self.name!r} is restarting after it failed ({self.last_error}); "
                    f"try again in {wait:.1f} s"
                )
            return await self._start()

    async def _start(self) -> Client:
        upstream = self.upstream
        try:
            launch = upstream.launch(self.hub.root, self.hub.environ)
        except UpstreamConfigError as exc:
            self._failed(str(exc))
            raise UpstreamUnavailable(str(exc)) from None
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        started: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        # A start given up on (its timeout) may still fail later: that is retrieved here.
        started.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.starts += 1
        self._runner = asyncio.create_task(self._run(launch, started), name=f"upstream {self.name}")
        try:
            async with asyncio.timeout(upstream.start_timeout):
                client = await asyncio.shield(started)
        except TimeoutError:
            await self._teardown(graceful=False)
            what = " ".join(launch.command) if launch.command else launch.url
            self._failed(f"it did not start within {upstream.start_timeout:g} s")
            raise UpstreamUnavailable(
                f"upstream {self.name!r} did not start and list its tools within "
                f"{upstream.start_timeout:g} s ({what}); raise start_timeout at "
                f"{upstream.where} if it needs longer{self._stderr_tail()}"
            ) from None
        except UpstreamUnavailable as exc:  # it listed more tools than it may
            await self._teardown(graceful=False)
            self._failed(str(exc))
            raise
        except Exception as exc:
            await self._teardown(graceful=False)
            reason = self.bounds.take_cut() or _reason(exc) + self._stderr_tail()
            self._failed(reason)
            raise UpstreamUnavailable(
                f"upstream {self.name!r} could not be started ({upstream.where}): {reason}"
            ) from None
        self.last_error = None
        return client

    async def _run(self, launch: Launch, started: asyncio.Future[Client]) -> None:
        """Hold the client open until stopped or until the upstream goes away."""
        try:
            async with self._client(launch) as client:
                if self.server_capabilities.get("logging") is not None:
                    with contextlib.suppress(MCPError), warnings.catch_warnings():
                        # Deprecated in the 2026-07-28 era only; upstreams speak 2025-11-25.
                        warnings.simplefilter("ignore")
                        await client.set_logging_level(LOG_LEVEL)
                self.tools = await self._list_tools(client)
                self.listed = True
                self.client = client
                if not started.done():
                    started.set_result(client)
                self.hub.imported(self, self.tools)
                stop = asyncio.create_task(self._stop.wait())
                ended = asyncio.create_task(self._ended.wait())
                try:
                    await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
                    ended.cancel()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None
            self._ended.set()
            if not self._stop.is_set() and started.done() and not started.exception():
                # It went away by itself: the next call restarts it, after the backoff.
                cut = self.bounds.take_cut()
                self._failed(cut if cut is not None else "it stopped" + self._stderr_tail())
                log.warning("upstream %r stopped: %s", self.name, self.last_error)

    @contextlib.asynccontextmanager
    async def _client(self, launch: Launch) -> AsyncIterator[Client]:
        roots = launch.roots

        async def list_roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(
                roots=[
                    types.Root.model_validate({"uri": Path(r).resolve().as_uri()})
                    for r in roots or ()
                ]
            )

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                self.relist_soon()

        client = Client(
            self._transport(launch),
            mode="legacy",
            cache=None,
            list_roots_callback=list_roots if roots is not None else None,
            logging_callback=self._logged,
            message_handler=on_message,
            read_timeout_seconds=None,
        )
        async with client:
            self.protocol_version = client.protocol_version
            info = client.server_info
            self.server_info = (
                {"name": info.name, "version": info.version} if info is not None else {}
            )
            self.server_capabilities = client.server_capabilities.model_dump(
                by_alias=True, exclude_none=True, mode="json"
            )
            yield client

    @contextlib.asynccontextmanager
    async def _transport(self, launch: Launch) -> AsyncIterator[Any]:
        if launch.command is not None:
            # Kept open while it runs: its tail is what a failure message quotes.
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"
            )
            guarded = [sys.executable, "-S", "-E", GUARD, str(os.getpid()), "--", *launch.command]
            # Not the SDK's stdio client: this one bounds what the upstream may send.
            async with stdio_transport(guarded, launch.env, self._stderr, self.bounds) as (
                read,
                write,
            ):
                yield _WatchedStream(read, self._ended), write
            return
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert launch.url is not None
        async with (
            create_mcp_http_client(headers=dict(launch.headers)) as http,
            streamable_http_client(launch.url, http_client=http) as (read, write),
        ):
            yield _WatchedStream(read, self._ended), write

    async def stop(self) -> None:
        """Stop the upstream (its process group goes with it); it may start again."""
        self._stop.set()
        await self._teardown()

    async def _teardown(self, *, graceful: bool = True) -> None:
        """End the runner: asked to stop (the SDK's shutdown, bounded), else cancelled."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stop.set()
        if graceful and not runner.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(runner), 8.0)
        if not runner.done():
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        self.client = None

    def _failed(self, reason: str) -> None:
        """Count a failure: the next start waits 0 s, then 0.5, 1, 2 ... up to 30 s.

        The count goes back to 0 only when a call is answered, so an upstream
        that starts and then crashes at every call backs off as one that
        cannot start does.
        """
        self.failures += 1
        self.last_error = reason
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self.failures - 2))
        self.retry_at = time.monotonic() + (delay if self.failures > 1 else 0.0)

    def _stderr_tail(self) -> str:
        """How the process ended and the last line it wrote on stderr, for a failure message."""
        stream = self._stderr
        if stream is None:
            return ""
        try:
            stream.flush()
            stream.seek(0, os.SEEK_END)
            size = stream.tell()
            stream.seek(max(0, size - 4000))
            lines = [line.strip() for line in stream.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        ended = [line for line in lines if line.startswith(GUARD_PREFIX)]
        said = [line for line in lines if not line.startswith(GUARD_PREFIX)]
        tail = ""
        if ended:
            status = ended[-1].rpartition(" with ")[2]
            tail += f"; it exited with {status}"
        if said:
            tail += f"; its last words on stderr: {said[-1][:STDERR_TAIL]!r}"
        return tail

    # -- calls ----------------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], tell: Callable[[_Event], None]
    ) -> ToolResult:
        """Call ``tool``; ``tell`` hears its progress and log notices as they arrive."""
        client = await self.ensure()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if self.upstream.url is not None and not self.bounds.admit("progress"):
                return  # as for log messages
            tell(_Event("progress", (progress, total, message)))

        self.listeners.add(tell)
        dropped = self.bounds.dropped["log"]
        try:
            result = await client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self.upstream.call_timeout,
                progress_callback=progress,
            )
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED or self._ended.is_set():
                await self._teardown()
                cut = self.bounds.take_cut()
                self._failed(
                    f"{cut}; it was stopped"
                    if cut is not None
                    else "it exited while answering" + self._stderr_tail()
                )
                raise UpstreamUnavailable(
                    f"upstream {self.name!r} stopped while answering {tool!r} "
                    f"({self.last_error}); it restarts on the next call"
                ) from None
            if exc.code == types.REQUEST_TIMEOUT:
                await self._hung(tool)
            raise ToolCallError(f"upstream {self.name!r} refused {tool!r}: {exc}") from None
        except TimeoutError:
            await self._hung(tool)
            raise  # not reached: _hung raises
        finally:
            self.listeners.discard(tell)
            lost = self.bounds.dropped["log"] - dropped
            if lost:
                tell(_Event("log", ("warning", _dropped_notice(lost))))
        self.failures = 0  # an answer: the next failure restarts at once again
        return _tool_result(result)

    async def _hung(self, tool: str) -> None:
        seconds = self.upstream.call_timeout
        await self._teardown()
        self._failed(f"it did not answer {tool!r} within {seconds:g} s")
        raise UpstreamUnavailable(
            f"upstream {self.name!r} did not answer {tool!r} within {seconds:g} s (call_timeout "
            f"at {self.upstream.where}); it was stopped and restarts on the next call"
        )

    async def _logged(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.upstream.url is not None and not self.bounds.admit("log"):
            return  # over HTTP the SDK reads it; a stdio upstream's transport limited it
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        if not self.listeners:  # to the server's log, which may be a terminal: shown
            log.info("upstream %r: %s", self.name, shown(text))
        for listener in list(self.listeners):
            listener(_Event("log", (params.level, text)))

    def relist_soon(self) -> None:
        """Its tools changed: list them again, once, however many notices arrive meanwhile.

        One relist runs at a time; notices that arrive while it runs make one
        more after it, never one each (20,000 notices held 20,000 tasks).
        """
        if self._relisting is not None and not self._relisting.done():
            self._relist_again = True
            return
        self._relisting = asyncio.get_running_loop().create_task(self._relist_while_asked())

    async def _relist_while_asked(self) -> None:
        self._relist_again = True
        while self._relist_again:
            self._relist_again = False
            await self.relist()

    async def relist(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            async with asyncio.timeout(self.upstream.start_timeout):
                tools = await self._list_tools(client)
        except (MCPError, TimeoutError, UpstreamUnavailable) as exc:
            log.warning(
                "upstream %r: listing its tools again failed: %s; it keeps the tools it had",
                self.name,
                shown(str(exc) or type(exc).__name__),
            )
            return
        self.tools = tools
        self.hub.imported(self, self.tools)

    async def _list_tools(self, client: Client) -> list[UpstreamTool]:
        """Every page of the upstream's tool list; ``UpstreamUnavailable`` past ``MAX_TOOLS``."""
        self.lists += 1
        tools: list[UpstreamTool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOLS):
            page = await client.list_tools(cursor=cursor)
            if len(tools) + len(page.tools) > MAX_TOOLS:
                raise UpstreamUnavailable(
                    f"upstream {self.name!r} lists more than {MAX_TOOLS:,} tools, which is "
                    f"more than it may ({self.upstream.where}); run a server that lists fewer, "
                    "or several upstreams that each list a part"
                )
            tools.extend(
                UpstreamTool.from_wire(t.model_dump(by_alias=True, exclude_none=True, mode="json"))
                for t in page.tools
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools


def _dropped_notice(count: int) -> str:
    return (
        f"{count:,} log messages of this call were dropped: an upstream may send "
        f"{NOTICE_BURST} at once and {NOTICE_RATE:g} a second after that"
    )


def _tool_result(result: types.CallToolResult) -> ToolResult:
    """The upstream's result as it was: its content blocks, structured content and isError."""
    wire = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    blocks = [Content(block) for block in wire.get("content", [])]
    return ToolResult(
        blocks,
        structured=wire.get("structuredContent"),
        meta=wire.get("_meta"),
        is_error=bool(wire.get("isError")),
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class UpstreamHub:
    """The running upstreams of one ``Presets``: the app's ``upstreams`` runtime.

    Applying an upstream's tool list (its adapters, the presets that waited
    for them, the sync that serves them) happens on the server's loop when
    the hub knows it, so the registries change where requests read them.
    """

    def __init__(
        self,
        upstreams: UpstreamSet,
        presets: Presets | None = None,
        *,
        root: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.presets = presets
        self.set = upstreams
        self.root = root
        self.environ = dict(os.environ if environ is None else environ)
        self._connections = {
            name: Connection(self, upstream) for name, upstream in self.set.upstreams.items()
        }
        self._pending = list(self.set.pending)
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._applied: set[str] = set()
        """Upstreams whose listed tools are adapters now: their waiting presets may register."""
        self._closed = False
        self._stopping: asyncio.Task[None] | None = None
        """The stop that ``close`` started on the server's loop (held so it is not collected)."""
        self.problems: list[str] = []
        self._starts: dict[str, asyncio.Future[None]] = {}
        """Each upstream's start in the background (``ready``), while it runs."""

    @classmethod
    def attach(cls, presets: Presets) -> UpstreamHub | None:
        """A hub for ``presets``, attached to its app as ``upstreams``; None without upstreams."""
        if not presets.upstreams:
            return None
        app = presets.manager.app
        hub = cls(presets.upstreams, presets, root=getattr(app, "root", None))
        attach = getattr(app, "attach", None)
        if callable(attach):
            attach(RUNTIME, hub)
        elif app is not None:
            setattr(app, RUNTIME, hub)
        if presets.upstreams.start_at_once:
            hub.start_all()
        return hub

    # -- the hub's loop -------------------------------------------------------

    def _submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        with self._lock:
            if self._closed:
                coro.close()
                raise UpstreamUnavailable("the server is stopping; upstreams are not started")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="presets-upstreams", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            home = self._loop
        try:
            return asyncio.run_coroutine_threadsafe(coro, home)
        except RuntimeError:  # the server's loop, which ran them, is closed
            coro.close()
            raise UpstreamUnavailable(
                "the server that ran the upstreams has stopped; upstreams are not started"
            ) from None

    async def _on_loop(self, coro: Any) -> Any:
        """Await ``coro`` on the hub's loop: right here when this is it, else across."""
        if asyncio.get_running_loop() is self._loop:
            return await coro
        return await asyncio.wrap_future(self._submit(coro))

    def _adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make the server's ``loop`` the hub's, unless the hub has a live loop already.

        Then a forwarded call crosses no thread at all: the upstream's client
        reads and writes on the loop the call arrived on. A hub that started
        before the server's loop ran (``serve --upstreams-at-start``, a
        snapshot) keeps the loop of its own thread.
        """
        with self._lock:
            home = self._loop
            if self._closed or self._thread is not None or home is loop:
                return
            if home is not None and not home.is_closed():
                return
            self._loop = loop
            for connection in self._connections.values():
                connection.rehome()

    def start_all(self) -> None:
        """Start every upstream now, without waiting (``serve --upstreams-at-start``)."""
        for connection in self._connections.values():
            self._submit(_quietly(connection.ensure()))

    # -- what the server asks -------------------------------------------------

    @property
    def waiting(self) -> bool:
        """Whether presets wait for tools of upstreams that have not listed them yet."""
        return bool(self._pending)

    async def ready(self) -> None:
        """Start the upstreams that presets wait for, and serve what they list (server loop).

        Called before ``tools/list`` and ``tools/call``; costs nothing once no
        preset waits. The starts run in the background: a request waits for
        an upstream's first start only, and at most ``READY_WAIT`` seconds from
        when it began, so a quick upstream's tools are in the first list and
        a slow or hung one stalls no request after that. What it lists later
        is served then (every client hears ``tools/list_changed``). One that
        fails to start is logged and tried again at a later list, after its
        backoff, in the background.
        """
        self._server_loop = asyncio.get_running_loop()
        if self._loop is not self._server_loop and self._thread is None:
            self._adopt(self._server_loop)
        if not self._pending:
            return
        names = {
            upstream.name
            for preset in self._pending
            for tool_id in preset.tool_ids
            if (upstream := self.set.owner(tool_id)) is not None
        }
        connections = [self._connections[n] for n in sorted(names) if n in self._connections]
        now = time.monotonic()
        for connection in connections:
            starting = self._starts.get(connection.name)
            busy = starting is not None and not starting.done()
            if connection.client is None and connection.retry_at <= now and not busy:
                self._starts[connection.name] = self._in_background(connection)
        waits = [
            (connection.ready_by, start)
            for connection in connections
            if (start := self._starts.get(connection.name)) is not None
            and not start.done()
            and connection.ready_by > now
        ]
        if waits:
            await asyncio.wait(
                [start for _, start in waits], timeout=max(w for w, _ in waits) - now
            )
        for connection in connections:
            if connection.listed:  # applied here, not only when the hub's notice lands
                self._apply(connection, connection.tools)
        self._apply_pending()

    def _in_background(self, connection: Connection) -> asyncio.Future[None]:
        """Start ``connection`` on the hub's loop without waiting for it; its failure is logged."""
        if connection.ready_by == 0.0:  # its first start: requests may wait for it, a little
            connection.ready_by = time.monotonic() + READY_WAIT
        if asyncio.get_running_loop() is self._loop:
            return asyncio.ensure_future(_quietly(connection.ensure()))
        return asyncio.wrap_future(self._submit(_quietly(connection.ensure())))

    async def call(
        self, upstream: str, tool: str, arguments: dict[str, Any], call: ToolCall
    ) -> Any:
        """Forward one call to ``upstream`` and await its result (on the caller's loop).

        Progress and log notices reach the caller's client as they arrive; a
        cancelled call cancels the upstream's request. On the hub's loop (the
        server's, as a rule) the call is awaited right there; from any other
        (a sync caller's, ``adapters.run_to_end``), it crosses to the hub's
        loop and its notices and result cross back.
        """
        connection = self._connections.get(upstream)
        if connection is None:
            raise UpstreamUnavailable(f"{call.name}: upstream {upstream!r} is not declared here")
        context = call.context

        def told(event: _Event) -> None:
            if context is None:
                return
            if event.kind == "progress":
                done, total, message = event.value
                context.progress(done, total, message)
            elif event.kind == "log":
                level, text = event.value
                context.log(level, f"[{upstream}] {text}")

        loop = asyncio.get_running_loop()
        try:
            if loop is self._loop:  # the server's loop, as a rule: no thread is crossed
                return await connection.call(tool, arguments, told)

            def tell(event: _Event) -> None:  # on the hub's loop: told on the caller's
                loop.call_soon_threadsafe(told, event)

            future = self._submit(connection.call(tool, arguments, tell))
            return await asyncio.wrap_future(future)
        except UpstreamUnavailable as exc:
            raise UpstreamUnavailable(f"{call.name}: {exc}") from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this call was cancelled: the upstream's request is cancelled with it
            # The hub's side was cancelled (the server is stopping), not this call.
            raise ToolCallError(f"{call.name}: the call was cancelled") from None

    def close(self) -> None:
        """Stop every upstream (their process groups go too); wait a little for them.

        On the server's loop, which cannot wait for itself, the stop is
        started and the loop finishes it; a loop that ends first cancels it,
        and the SDK still closes each process (shielded), as it does for every
        upstream when ``presets serve``'s loop ends.
        """
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or loop.is_closed():
            return

        async def stop_all() -> None:
            await asyncio.gather(
                *(c.stop() for c in self._connections.values()), return_exceptions=True
            )

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._stopping = loop.create_task(stop_all())
            return
        if thread is None and not loop.is_running():
            return  # the server's loop stopped: its tasks, and the upstreams, ended with it
        future = asyncio.run_coroutine_threadsafe(stop_all(), loop)
        with contextlib.suppress(Exception):
            future.result(timeout=10)
        if thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)

    def status(self) -> dict[str, Any]:
        """Each upstream: running or not, how often it started, its last failure."""
        return {
            name: {
                "running": c.client is not None,
                "starts": c.starts,
                "failures": c.failures,
                "last_error": c.last_error,
                "tools": len(c.tools),
                "lists": c.lists,
            }
            for name, c in self._connections.items()
        }

    # -- importing tool lists (the hub's loop, applied on the server's) --------

    def imported(self, connection: Connection, tools: list[UpstreamTool]) -> None:
        """An upstream listed its tools: serve them (on the server's loop when there is one)."""
        if self.presets is None:
            return  # a snapshot only records them
        loop = self._server_loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._apply, connection, tools)
        else:
            self._apply(connection, tools)

    def _apply(self, connection: Connection, tools: list[UpstreamTool]) -> None:
        if self.presets is None:
            return
        with self._lock:
            changed = self._apply_tools(connection.upstream, tools)
            self._applied.add(connection.name)
            self._apply_pending()
            if not changed:
                return
            try:
                self.presets.sync.sync()
            except PresetError as exc:  # a loop callback: logged, never a traceback
                log.warning(
                    "%s: upstream %r: its tools could not be served: %s",
                    connection.upstream.where,
                    connection.name,
                    shown(str(exc)),
                )

    def _apply_tools(self, upstream: Upstream, tools: list[UpstreamTool]) -> bool:
        """Make the adapters of ``upstream`` those of ``tools``; whether anything changed.

        An adapter whose tool is no longer listed stays (a preset may list it):
        calling it forwards the call, and the upstream says it has no such tool.
        A tool whose MCP name another plugin's tool has is left out, and logged.
        """
        assert self.presets is not None
        registry = self.presets.tool_adapters
        adapters, problems = adapters_for(upstream, tools)
        for problem in problems:
            log.warning("%s: %s", upstream.where, problem)
        taken = {
            registry.mcp_name(a): a.id
            for a in registry.list()
            if not a.id.startswith(upstream.name + ".")
        }
        changed = False
        for adapter in adapters:
            name = registry.mcp_name(adapter)
            if name in taken:
                log.warning(
                    "%s: upstream %r: tool %r would be named %r, which %r has; it is left out",
                    upstream.where,
                    upstream.name,
                    adapter.id,
                    name,
                    taken[name],
                )
                continue
            current = registry.get(adapter.id)
            if current == adapter:
                continue
            if current is not None:
                registry.unregister(adapter.id)
            registry.register(adapter)
            changed = True
        for tool in tools:
            tool_id = upstream.tool_id(tool.name)
            if registry.get(tool_id) is not None:
                self.set.tools[tool_id] = tool
        return changed

    def _apply_pending(self) -> None:
        """Register the waiting presets whose upstreams have now listed their tools."""
        if self.presets is None:
            return
        with self._lock:
            still: list[Any] = []
            for preset in self._pending:
                owners = {u.name for t in preset.tool_ids if (u := self.set.owner(t)) is not None}
                if not owners <= self._applied:
                    still.append(preset)
                    continue
                problem = self._preset_problem(preset)
                if problem is not None:
                    log.warning("preset %r is left out: %s", preset.name, problem)
                    continue
                try:
                    self.presets.registry.register(preset)
                except PresetValidationError as exc:
                    log.warning("preset %r is left out: %s", preset.name, exc)
            self._pending = still

    def _preset_problem(self, preset: Any) -> str | None:
        assert self.presets is not None
        registry = self.presets.tool_adapters
        missing = [t for t in preset.tool_ids if registry.get(t) is None]
        if missing:
            return f"no upstream lists tool id(s) {', '.join(map(repr, missing))}"
        for tool_id in preset.tool_ids:
            risk = self.set.risk_problem(preset, tool_id)
            if risk is not None:
                return risk
        return None

    # -- snapshots --------------------------------------------------------------

    def snapshot(self, name: str, *, taken_at: str) -> Snapshot:
        """Start ``name`` (if it is not running) and record what it lists (any thread)."""
        connection = self._connections[name]
        future = self._submit(connection.ensure())
        future.result()
        upstream = connection.upstream
        return Snapshot(
            upstream=name,
            declaration=upstream.declaration(),
            tools=tuple(connection.tools),
            server=dict(connection.server_info),
            protocol_version=connection.protocol_version,
            client_capabilities=client_capabilities(upstream),
            server_capabilities=dict(connection.server_capabilities),
            taken_at=taken_at,
        )


async def _quietly(coro: Any) -> None:
    try:
        await coro
    except UpstreamUnavailable as exc:
        log.warning("%s", shown(str(exc)))
