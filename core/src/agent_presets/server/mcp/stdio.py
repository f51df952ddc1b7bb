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

Given explicit streams the SDK skips its claim on fd 0 and 1, so this module
claims them itself, as the SDK would: while serving, fd 0 reads the null
device and fd 1 points at stderr, so a handler's or a child's stray ``print``
misses the wire; both are restored on exit. Where the process's streams are
not backed by those descriptors (a test harness replaced them), they are
served in place, as the SDK does.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import IO, TYPE_CHECKING, Any, Final, TextIO

import anyio
from mcp.server.stdio import stdio_server

from agent_presets.server.mcp.envelope import Rejection, check, too_long
from agent_presets.server.mcp.http import DEFAULT_MAX_BODY_SIZE

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    # The SDK names these stream types (Server.run's parameters) only in a
    # private module; they are imported for typing alone.
    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]

__all__ = ["MAX_LINE", "stdio_transport"]

log = logging.getLogger("agent_presets.server.mcp.stdio")

MAX_LINE: Final = DEFAULT_MAX_BODY_SIZE
"""Characters in one line (one message) at most; the same 4 MiB as an HTTP body."""

_DISCARD_CHUNK: Final = 1 << 16
"""Characters read at a time while dropping the rest of an over-long line."""

_claim_lock = threading.Lock()
_claimed: set[int] = set()


class _WireText(io.TextIOWrapper):
    """UTF-8 text over a wire buffer this object does not own.

    Closing it (also at garbage collection) detaches instead of closing the
    buffer: in the in-place case that buffer is ``sys.stdout``'s own.
    """

    def __init__(self, buffer: IO[bytes], **kwargs: Any) -> None:
        super().__init__(buffer, encoding="utf-8", **kwargs)

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


class _LineWriter(_WireText):
    """The wire out: each ``write`` is whole lines, written and flushed under one lock.

    The SDK writes one message per ``write`` (then flushes); the invalid-line
    answers go through the same ``write``; the lock keeps them from tearing
    each other's frames, whichever worker thread calls.
    """

    def __init__(self, buffer: IO[bytes]) -> None:
        super().__init__(buffer)
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        with self._lock:
            written = super().write(text)
            super().flush()
        return written

    def flush(self) -> None:
        # TextIOWrapper is not thread-safe: the SDK's flush must not run
        # inside another thread's write.
        with self._lock:
            super().flush()


class _WireOut(anyio.AsyncFile[str]):
    """``stdout`` for the SDK's writer: one worker-thread hop per message, not two.

    The SDK writes each message and then flushes it, and ``anyio.wrap_file``
    sends each of the two to a worker thread and back. ``_LineWriter.write``
    flushes what it wrote already, so the flush has nothing left to do and
    makes no hop.
    """

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()


class _CheckedLines(_WireText):
    """The wire in: ``readline`` returns only lines the SDK will accept.

    A line that is not one valid JSON-RPC message, or is longer than
    ``max_line``, is answered on ``out`` and skipped, so the SDK never turns
    it into a silent exception.
    """

    def __init__(self, buffer: IO[bytes], out: _LineWriter, max_line: int = MAX_LINE) -> None:
        # errors="replace", as the SDK reads: a bad byte is one bad message,
        # not the end of the connection.
        super().__init__(buffer, errors="replace")
        self._out = out
        self.max_line = max_line

    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]  # as TextIOWrapper
        while True:
            # One character past the limit tells an over-long line from one that fits.
            line = super().readline(self.max_line + 1)
            if not line or not line.strip():
                if not line:
                    return line
                continue
            rejection: Rejection | None
            if len(line) > self.max_line and not line.endswith("\n"):
                rejection = too_long(line, self.max_line)
                del line  # the rest must not be read while this much is held
                self._discard_rest()
            else:
                rejection = check(line.rstrip("\r\n"))
            if rejection is None:
                return line
            log.debug("answered an invalid JSON-RPC message: %s", rejection.message)
            answer = rejection.to_json()
            if answer is not None:
                self._out.write(answer + "\n")

    def _discard_rest(self) -> None:
        """Read the rest of the current line, a chunk at a time, and drop it."""
        while True:
            chunk = super().readline(_DISCARD_CHUNK)
            if not chunk or chunk.endswith("\n"):
                return


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

    def __init__(self, lines: _CheckedLines, on_eof: Callable[[], None] | None) -> None:
        super().__init__(lines)
        self._lines = lines
        self._on_eof = on_eof
        self._send, self._receive = anyio.create_memory_object_stream[str | Exception](self.AHEAD)
        self._room = threading.Semaphore(self.AHEAD)
        self._started = False

    async def readline(self) -> str:
        if not self._started:
            self._started = True
            threading.Thread(
                target=self._read,
                args=(asyncio.get_running_loop(),),
                name="presets-stdin",
                daemon=True,
            ).start()
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
            item: str | Exception
            try:
                item = self._lines.readline()
            except Exception as exc:  # the SDK's reader raises it, as it did reading itself
                item = exc
            self._room.acquire()
            try:
                loop.call_soon_threadsafe(self._hand_over, item)
            except RuntimeError:  # the loop is closed: nobody reads any more
                return
            if not isinstance(item, str) or not item:
                return

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
    *, max_line: int = MAX_LINE, on_eof: Callable[[], None] | None = None
) -> AsyncIterator[Streams]:
    """Serve MCP on this process's stdin and stdout: ``(read_stream, write_stream)``.

    The drop-in for ``mcp.server.stdio.stdio_server()``; a line longer than
    ``max_line`` characters is refused (see the module docstring). Raises
    ``RuntimeError`` when another ``stdio_transport()`` in this process is
    serving. ``on_eof`` runs on a worker thread when stdin ends, or when the
    first SIGINT ends the input (in the main thread), before the server hears
    of it (``PresetServer.end_listen_streams`` ends listen streams gracefully
    there).
    """
    if max_line < 1:
        raise ValueError(f"max_line must be at least 1 character, got {max_line}")
    with (
        _claim(0, sys.stdin, "rb", _open_stdin_diversion) as wire_in,
        _claim(1, sys.stdout, "wb", _open_stdout_diversion) as wire_out,
    ):
        out = _LineWriter(wire_out)
        reader = _DaemonLines(_CheckedLines(wire_in, out, max_line), on_eof)
        async with (
            stdio_server(stdin=reader, stdout=_WireOut(out)) as (read_stream, write_stream),
            anyio.create_task_group() as tg,
        ):
            if _sigint_ends_input():
                tg.start_soon(_end_input_on_sigint, reader)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()


def _open_stdin_diversion() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _open_stdout_diversion() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


@contextmanager
def _claim(fd: int, stream: TextIO, mode: str, diversion: Callable[[], int]) -> Iterator[IO[bytes]]:
    """The wire that was on ``fd``, as a binary file; ``fd`` points elsewhere meanwhile.

    Best effort, as the SDK's claim: where ``stream`` is not backed by ``fd``
    or descriptors cannot be moved, ``stream``'s own buffer is served in place.
    """
    with _claim_lock:
        if fd in _claimed:
            raise RuntimeError(f"another stdio transport in this process has claimed fd {fd}")
        _claimed.add(fd)
    try:
        moved = _move_wire(fd, stream, diversion)
        if moved is None:
            yield stream.buffer
            return
        try:
            # closefd=False: a worker thread can still be blocked reading it
            # when serving ends, so it is never closed and recycled under it.
            yield os.fdopen(moved, mode, closefd=False)
        finally:
            os.dup2(moved, fd)
    finally:
        with _claim_lock:
            _claimed.discard(fd)


def _move_wire(fd: int, stream: TextIO, diversion: Callable[[], int]) -> int | None:
    """A private duplicate of ``fd`` with ``fd`` diverted, or ``None`` to serve in place."""
    if sys.platform == "win32":  # pragma: no cover - the SDK's handle rebinding is not copied
        return None
    try:
        if stream.buffer.fileno() != fd:
            return None
    except (AttributeError, OSError, ValueError):
        return None
    import fcntl

    if fd == 1:
        stream.flush()  # what was printed before serving still goes where it was meant to
    try:
        # Above the standard range and close-on-exec: no child inherits the wire.
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None
    try:
        target = diversion()
    except OSError:
        os.close(moved)
        return None
    try:
        os.dup2(target, fd)
    except OSError:
        os.dup2(moved, fd)
        os.close(moved)
        return None
    finally:
        os.close(target)
    return moved
