"""An upstream's stdio transport: the SDK's protocol, with bounds a hostile server cannot pass.

The SDK's stdio client joins each chunk it reads to the line read so far,
so a line of n bytes costs it about n squared over 64 KiB bytes copied, on
the server's loop: a 40 MB result took 20.8 s and stalled every other
client meanwhile. It has no size limit either, and it parses and hands on
every message, so 200,000 log notices during one call held another
client's call for 150 s. This transport speaks the same newline-delimited
JSON-RPC to the same guard process (``upstream_guard.py``), and:

- reads in linear time: bytes are gathered in one buffer and each new chunk
  is searched for a newline once;
- ends the connection at a message longer than ``MAX_MESSAGE`` bytes, and
  says so (``Bounds.cut``): the calls in flight fail naming the limit, and
  the upstream is stopped and restarts on the next call;
- lets through at most ``NOTICE_BURST`` log and progress notices at once
  and ``NOTICE_RATE`` a second after that, dropping the rest before they
  are parsed, and counting them (``Bounds.dropped``);
- drops a line that is not JSON-RPC with a count, where the SDK logged a
  traceback for each.

Stopping follows the SDK's order: close stdin, wait, then SIGTERM the
process group (the guard ends everything it started) and SIGKILL it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp.shared.message import SessionMessage

log = logging.getLogger("agent_presets.server")

MAX_MESSAGE: Final = 8 * 1024 * 1024
"""Bytes one message of an upstream may take (a line of JSON): 8 MiB."""
NOTICE_BURST: Final = 100
"""Log or progress notices an upstream may send at once."""
NOTICE_RATE: Final = 50.0
"""Log or progress notices a second an upstream may send after its burst; the rest are dropped."""
READ_CHUNK: Final = 64 * 1024
STOP_GRACE: Final = 2.0
"""Seconds the guard has to exit after stdin closes, and again after SIGTERM."""
_PEEK: Final = 64 * 1024
"""Lines up to this long are looked at for a notice before they are parsed."""
_LIMITED: Final = {"notifications/message": "log", "notifications/progress": "progress"}


class _Rate:
    """A token bucket: ``burst`` at once, ``rate`` a second after that."""

    def __init__(self, burst: int, rate: float) -> None:
        self.burst = burst
        self.rate = rate
        self.tokens = float(burst)
        self.at = time.monotonic()

    def admit(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class Bounds:
    """What one upstream's transport let through, dropped and why it ended (one per upstream).

    ``cut`` says why the transport ended the connection, until the
    connection reads it (``take_cut``); ``dropped`` counts the notices and
    lines dropped, by kind (``log``, ``progress``, ``invalid``).
    """

    name: str
    cut: str | None = None
    dropped: dict[str, int] = field(default_factory=lambda: {"log": 0, "progress": 0})
    _rates: dict[str, _Rate] = field(default_factory=dict, repr=False)
    _warned: float = 0.0

    def take_cut(self) -> str | None:
        cut, self.cut = self.cut, None
        return cut

    def admit(self, kind: str) -> bool:
        rate = self._rates.get(kind)
        if rate is None:
            rate = self._rates[kind] = _Rate(NOTICE_BURST, NOTICE_RATE)
        if rate.admit():
            return True
        self.drop(kind)
        return False

    def drop(self, kind: str) -> None:
        self.dropped[kind] = self.dropped.get(kind, 0) + 1
        now = time.monotonic()
        if now - self._warned >= 10.0:  # said at most every 10 s, with the counts so far
            self._warned = now
            counts = ", ".join(f"{n:,} {k}" for k, n in self.dropped.items() if n)
            log.warning(
                "upstream %r sends more than it may (%d notices at once, %g a second, "
                "only JSON-RPC lines); dropped so far: %s",
                self.name,
                NOTICE_BURST,
                NOTICE_RATE,
                counts,
            )

    def message(self, line: bytes) -> SessionMessage | None:
        """The JSON-RPC message of ``line``, or None when it is dropped."""
        try:
            if len(line) <= _PEEK:
                data = json.loads(line)
                if isinstance(data, dict) and "id" not in data:
                    kind = _LIMITED.get(data.get("method"))  # type: ignore[arg-type]
                    if kind is not None and not self.admit(kind):
                        return None
                parsed = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
            else:
                parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            self.drop("invalid")
            return None
        return SessionMessage(parsed)


class _Lines:
    """Newline-delimited lines from chunks, each byte looked at once; past ``limit``, an error."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.scanned = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buffer += chunk
        lines: list[bytes] = []
        start = 0
        while True:
            end = self.buffer.find(b"\n", max(start, self.scanned))
            if end < 0:
                break
            if end - start > self.limit:
                raise _TooLong
            lines.append(bytes(self.buffer[start:end]))
            start = end + 1
        del self.buffer[:start]
        self.scanned = len(self.buffer)
        if self.scanned > self.limit:
            raise _TooLong
        return lines


class _TooLong(Exception):
    pass


@contextlib.asynccontextmanager
async def stdio_transport(
    command: Sequence[str], env: Mapping[str, str], errlog: TextIO, bounds: Bounds
) -> AsyncIterator[tuple[Any, Any]]:
    """``(read, write)`` streams of the process ``command`` starts, in a session of its own."""
    process = await anyio.open_process(
        list(command), env=dict(env), stderr=errlog, start_new_session=True
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        assert process.stdout is not None
        lines = _Lines(MAX_MESSAGE)
        async with read_writer:
            try:
                while True:
                    chunk = await process.stdout.receive(READ_CHUNK)
                    for line in lines.feed(chunk):
                        message = bounds.message(line)
                        if message is not None:
                            await read_writer.send(message)
                    await anyio.lowlevel.checkpoint()  # a flood yields to other clients
            except _TooLong:
                bounds.cut = (
                    f"it sent a message longer than {MAX_MESSAGE:,} bytes, the most an "
                    "upstream may send"
                )
                log.warning("upstream %r: %s; it is stopped", bounds.name, bounds.cut)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            except OSError as exc:
                log.warning("upstream %r: reading its output failed: %s", bounds.name, exc)

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the end, not a request hanging

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                await _stop(process)
                await read_stream.aclose()
            tg.cancel_scope.cancel()


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin; then SIGTERM the group (the guard ends its command's); then SIGKILL it."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for sent in (None, signal.SIGTERM, signal.SIGKILL):
        if sent is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, sent)
        with anyio.move_on_after(STOP_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.01)
        if process.returncode is not None:
            break
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
    # The asyncio transport stays open (and complains when collected after its loop
    # closed) while nothing closes it; nothing public reaches it, as the SDK found too.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(OSError):
            close()
