"""MCP over stdio that answers every invalid line, built on the SDK's transport.

The SDK's ``stdio_server()`` turns a line it cannot validate into an
``Exception`` on the read stream, which the server logs and nobody answers:
the client waits for its own timeout. ``stdio_transport()`` hands the SDK a
stdin that reads the wire line by line and answers an invalid line itself
(``envelope.check``: ``-32700``, ``-32600``), so the SDK only ever sees
messages it accepts; blank lines are skipped, as they are no message.

A line is at most ``MAX_LINE`` characters (4 MiB, the HTTP transport's body
limit): a longer one is answered ``-32600`` naming the limit, with the
request's id when its first part shows one, and the rest of it is read and
dropped in chunks, never held, so a client that sends 300 MB on one line
costs the server a few MiB and the next line is served as usual.

One writer: the answers go out through the same stdout object the SDK
writes with, one ``write`` per line under a lock, so frames never interleave.

Given explicit streams the SDK skips its claim on fd 0 and 1, so this
transport claims them itself, as the SDK would (``start.wire.claim``). Or it
takes over the wire from the start front (``agent_presets.server.start``),
which has read and answered the first lines before the SDK loaded: every
line it read reaches the SDK first, in order, then the rest of the input.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack, asynccontextmanager, suppress
from typing import IO, TYPE_CHECKING, Final

import anyio
from mcp.server.stdio import stdio_server

from agent_presets.server.mcp.envelope import Rejection, check, too_long
from agent_presets.server.start.wire import (
    MAX_MESSAGE,
    LineReader,
    LineWriter,
    TooLong,
    claim,
)

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    # The SDK names these stream types (Server.run's parameters) only in a
    # private module; they are imported for typing alone.
    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]

    from agent_presets.server.start.front import StartFront

__all__ = ["MAX_LINE", "stdio_transport"]

log = logging.getLogger("agent_presets.server.mcp.stdio")

MAX_LINE: Final = MAX_MESSAGE
"""Characters in one line (one message) at most; the same 4 MiB as an HTTP body."""

# The names this module had before the wire moved to ``start.wire``.
_LineWriter = LineWriter


class _WireOut(anyio.AsyncFile[str]):
    """``stdout`` for the SDK's writer: one worker-thread hop per message, not two.

    The SDK writes each message and then flushes it, and ``anyio.wrap_file``
    sends each of the two to a worker thread and back. ``LineWriter.write``
    flushes what it wrote already, so the flush has nothing left to do and
    makes no hop.
    """

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()


class _CheckedLines(LineReader):
    """The wire in: ``readline`` returns only lines the SDK will accept.

    A line that is not one valid JSON-RPC message, or is longer than
    ``max_line``, is answered on ``out`` and skipped, so the SDK never turns
    it into a silent exception.
    """

    def __init__(self, buffer: IO[bytes], out: LineWriter, max_line: int = MAX_LINE) -> None:
        super().__init__(buffer, max_line)
        self._out = out

    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]  # as TextIOWrapper
        while True:
            line = self.checked(self.read_item())
            if line is not None:
                return line

    def checked(self, item: str | TooLong) -> str | None:
        """``item`` if the SDK accepts it ("" is the end); None once it is answered here."""
        if isinstance(item, str) and not item:
            return item
        rejection: Rejection | None
        if isinstance(item, TooLong):
            rejection = too_long(item.head, self.max_line)
        else:
            rejection = check(item.rstrip("\r\n"))
        if rejection is None:
            assert isinstance(item, str)
            return item
        log.debug("answered an invalid JSON-RPC message: %s", rejection.message)
        answer = rejection.to_json()
        if answer is not None:
            self._out.write(answer + "\n")
        return None


class _DaemonLines(anyio.AsyncFile[str]):
    """``lines`` for the SDK's reader, read one line ahead on a daemon thread of its own.

    A read of a pipe the client keeps open blocks until the client writes. On
    an anyio worker thread (``anyio.wrap_file``) that read cannot be
    cancelled and the worker is joined at exit, so a server could not stop
    while its client kept stdin open: SIGINT, Claude Code's way to stop it,
    did nothing until SIGTERM killed it. A daemon thread is left to its read.

    The thread hands each line to the loop and goes back to reading without
    waiting for the loop (one wake-up of the loop per line; the loop never
    has to wake the thread, which would contend with the request being
    served for the interpreter lock). It reads at most ``AHEAD`` lines ahead
    of the SDK: ``_room`` counts what the loop has not taken yet.

    ``end()`` is an end of input the loop makes itself. Either end runs
    ``on_eof`` first, on a worker thread, before the SDK sees it.
    """

    AHEAD: Final = 1

    def __init__(
        self,
        lines: _CheckedLines,
        on_eof: Callable[[], None] | None,
        front: StartFront | None = None,
    ) -> None:
        super().__init__(lines)
        self._lines = lines
        self._on_eof = on_eof
        self._front = front
        self._send, self._receive = anyio.create_memory_object_stream[str | Exception](self.AHEAD)
        self._room = threading.Semaphore(self.AHEAD)
        self._started = False

    def start(self) -> None:
        """Start reading, for the running loop (the first ``readline`` does it otherwise)."""
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        if self._front is not None:  # its thread goes on reading, for us now
            self._front.hand_over(lambda item: self._deliver(loop, item))
        else:
            threading.Thread(
                target=self._read, args=(loop,), name="presets-stdin", daemon=True
            ).start()

    async def readline(self) -> str:
        self.start()
        try:
            item = await self._receive.receive()
        except anyio.EndOfStream:
            item = ""
        else:
            self._room.release()
        if isinstance(item, Exception):
            raise item
        if not item:
            on_eof, self._on_eof = self._on_eof, None
            if on_eof is not None:  # before the SDK learns of it and ends the calls
                await anyio.to_thread.run_sync(on_eof)
        return item

    def end(self) -> None:
        """End the input here: the next ``readline`` answers end of file."""
        self._send.close()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            item: str | TooLong | Exception
            try:
                item = self._lines.read_item()
            except Exception as exc:  # the SDK's reader raises it, as it did reading itself
                item = exc
            if not self._deliver(loop, item):
                return

    def _deliver(self, loop: asyncio.AbstractEventLoop, item: str | TooLong | Exception) -> bool:
        """On the reading thread: check ``item`` and hand it to the loop; False at the end."""
        if not isinstance(item, Exception):
            line = self._lines.checked(item)
            if line is None:  # answered already
                return True
            item = line
        self._room.acquire()
        try:
            loop.call_soon_threadsafe(self._hand_over, item)
        except RuntimeError:  # the loop is closed: nobody reads any more
            return False
        return isinstance(item, str) and bool(item)

    def _hand_over(self, item: str | Exception) -> None:
        """On the loop: queue ``item`` for ``readline`` (``_room`` keeps the queue from filling)."""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(item)


def _sigint_ends_input() -> bool:
    """Whether this loop can take SIGINT (only the main thread can; not on Windows)."""
    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


async def _end_input_on_sigint(reader: _DaemonLines) -> None:
    """The first SIGINT ends the input, as a client closing stdin would; a second interrupts.

    Claude Code stops its server with SIGINT while stdin is open: the listen
    streams then end with their result (``on_eof``), not ``-32000``.
    """
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            log.info("SIGINT: ending the stdio connection")
            reader.end()
            break


@asynccontextmanager
async def stdio_transport(
    *,
    max_line: int = MAX_LINE,
    on_eof: Callable[[], None] | None = None,
    front: StartFront | None = None,
) -> AsyncIterator[Streams]:
    """Serve MCP on this process's stdin and stdout: ``(read_stream, write_stream)``.

    The drop-in for ``mcp.server.stdio.stdio_server()``; a line longer than
    ``max_line`` characters is refused (see the module docstring). Raises
    ``RuntimeError`` when another ``stdio_transport()`` in this process is
    serving. ``on_eof`` runs on a worker thread when stdin ends, or when the
    first SIGINT ends the input (in the main thread), before the server hears
    of it (``PresetServer.end_listen_streams`` ends listen streams gracefully
    there). ``front``: the start front whose wire this takes over (its
    ``max_line`` then applies); it is closed when serving ends.
    """
    if max_line < 1:
        raise ValueError(f"max_line must be at least 1 character, got {max_line}")
    with ExitStack() as stack:
        wire_in: IO[bytes]
        if front is None:
            wire_in = stack.enter_context(claim(0, sys.stdin, "rb"))
            out = LineWriter(stack.enter_context(claim(1, sys.stdout, "wb")))
        else:
            stack.callback(front.close)
            wire_in, out, max_line = front.wire_in, front.out, front.max_line
        reader = _DaemonLines(_CheckedLines(wire_in, out, max_line), on_eof, front)
        if front is not None:
            reader.start()  # the front answers nothing more from here
        async with (
            stdio_server(stdin=reader, stdout=_WireOut(out)) as (read_stream, write_stream),
            anyio.create_task_group() as tg,
        ):
            if _sigint_ends_input():
                tg.start_soon(_end_input_on_sigint, reader)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
