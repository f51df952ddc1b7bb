"""The stdio reader's hand-off: lines reach the SDK in order, and it never reads far ahead.

The daemon thread hands each line to the loop without waiting for it
(``_DaemonLines``), so what bounds its memory is ``AHEAD``: a client that
writes faster than the server reads must find its lines waiting in the pipe,
not in the server.
"""

from __future__ import annotations

import io
import os
import threading
import time

import anyio
import pytest

from agent_presets.server.mcp.stdio import _CheckedLines, _DaemonLines, _LineWriter

PING = '{"jsonrpc":"2.0","id":%d,"method":"ping"}\n'


class CountingPipe(io.RawIOBase):
    """A pipe's read end that counts the lines handed to the reader."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lines_read = 0
        self.lock = threading.Lock()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # One byte at a time, so what was read is what the reader took.
        data = os.read(self.fd, 1)
        if data == b"\n":
            with self.lock:
                self.lines_read += 1
        buffer[: len(data)] = data
        return len(data)


def reader_over(fd: int) -> tuple[_DaemonLines, CountingPipe]:
    pipe = CountingPipe(fd)
    out = _LineWriter(io.BytesIO())
    return _DaemonLines(_CheckedLines(io.BufferedReader(pipe, 1), out), None), pipe


@pytest.mark.anyio
async def test_lines_arrive_in_order_then_end_of_file() -> None:
    read_end, write_end = os.pipe()
    reader, _ = reader_over(read_end)
    os.write(write_end, "".join(PING % n for n in range(50)).encode())
    os.close(write_end)
    got = [await reader.readline() for _ in range(50)]
    assert got == [PING % n for n in range(50)]
    assert await reader.readline() == ""
    os.close(read_end)


@pytest.mark.anyio
async def test_the_reader_reads_at_most_its_bound_ahead_of_the_sdk() -> None:
    read_end, write_end = os.pipe()
    reader, pipe = reader_over(read_end)
    os.write(write_end, "".join(PING % n for n in range(20)).encode())
    assert await reader.readline() == PING % 0
    # The thread has had time to read everything if nothing held it back.
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        await anyio.sleep(0.05)
    # The line taken, AHEAD waiting for the SDK, and one read and waiting for room.
    assert pipe.lines_read <= 1 + _DaemonLines.AHEAD + 1
    for n in range(1, 20):
        assert await reader.readline() == PING % n
    os.close(write_end)
    assert await reader.readline() == ""
    os.close(read_end)
