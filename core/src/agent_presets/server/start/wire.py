"""The stdio wire without the SDK: claiming fd 0 and 1, reading lines, writing them.

``presets serve`` reads its first lines before the ``mcp`` SDK has loaded
(``agent_presets.server.start.front``), and the SDK's transport
(``agent_presets.server.mcp.stdio``) goes on reading and writing the same
wire, so both use what is here:

- ``claim`` takes fd 0 or 1 for the wire, as the SDK's ``stdio_server()``
  would: while serving, fd 0 reads the null device and fd 1 points at
  stderr, so a handler's or a child's stray ``print`` misses the wire; both
  are restored on exit. Where the process's streams are not backed by those
  descriptors (a test harness replaced them), they are served in place.
- ``LineWriter``: the wire out, one ``write`` per line under a lock, so frames
  never interleave whichever thread writes.
- ``LineReader``: the wire in, line by line, at most ``max_line`` characters a
  line; the rest of a longer one is read and dropped in chunks, never held.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any, Final, TextIO

__all__ = ["HEAD", "MAX_MESSAGE", "LineReader", "LineWriter", "TooLong", "WireText", "claim"]

log = logging.getLogger("agent_presets.server.start")

MAX_MESSAGE: Final = 4 * 1024 * 1024
"""Characters in one message (one stdio line) at most: the SDK's default HTTP body limit,
``server.mcp.http.DEFAULT_MAX_BODY_SIZE`` (a test holds the two equal)."""

HEAD: Final = 64 * 1024
"""Characters of an over-long line kept to answer it (its id is read from them)."""

_DISCARD_CHUNK: Final = 1 << 16
"""Characters read at a time while dropping the rest of an over-long line."""

_claim_lock = threading.Lock()
_claimed: set[int] = set()


class WireText(io.TextIOWrapper):
    """UTF-8 text over a wire buffer this object does not own.

    Closing it (also at garbage collection) detaches instead of closing the
    buffer: in the in-place case that buffer is ``sys.stdout``'s own.
    """

    def __init__(self, buffer: IO[bytes], **kwargs: Any) -> None:
        super().__init__(buffer, encoding="utf-8", **kwargs)

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


class LineWriter(WireText):
    """The wire out: each ``write`` is whole lines, written and flushed under one lock.

    The SDK writes one message per ``write`` (then flushes); the answers made
    without it go through the same ``write``; the lock keeps them from tearing
    each other's frames, whichever worker thread calls.

    ``expect(id, line)``: the start front answered request ``id`` with
    ``line`` already, and the full server is given the request again so that
    its state is what it would be had it answered (``front.py``); its answer
    is then dropped here, not sent twice. An answer that differs from
    ``line`` is logged as an error (the client was told something the full
    server would not have said) and handed to ``on_mismatch``.
    """

    def __init__(self, buffer: IO[bytes]) -> None:
        super().__init__(buffer)
        self._lock = threading.RLock()
        self._expected: dict[str, str] = {}
        self._all_seen = threading.Event()
        self._all_seen.set()
        self.on_mismatch: Callable[[str, str, str], None] | None = None
        """Called with ``(request id, line sent, the full server's line)`` on a difference."""

    def expect(self, request_id: str, line: str) -> None:
        """Drop the next answer to ``request_id`` (its JSON text): the client has ``line``."""
        with self._lock:
            self._expected[request_id] = line
            self._all_seen.clear()

    def wait_expected(self, timeout: float) -> bool:
        """Wait until every expected answer has come (False: ``timeout`` seconds passed)."""
        return self._all_seen.wait(timeout)

    def send(self, text: str) -> None:
        """Write ``text`` as it is: an answer of the front's own, never one to drop."""
        with self._lock:
            super().write(text)
            super().flush()

    def write(self, text: str) -> int:
        with self._lock:
            if self._expected and self._drop(text):
                return len(text)
            written = super().write(text)
            super().flush()
        return written

    def _drop(self, text: str) -> bool:
        """Whether ``text`` is the answer the front gave already (checked, then dropped)."""
        try:
            message = json.loads(text)
        except ValueError:
            return False
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            return False
        key = json.dumps(message.get("id"))
        line = self._expected.pop(key, None)
        if line is None:
            return False
        if not self._expected:
            self._all_seen.set()
        if text.rstrip("\n") != line.rstrip("\n"):
            log.error(
                "the answer given before the SDK loaded to request %s differs from the full "
                "server's: %.300s -- the full server says: %.300s",
                key,
                line,
                text,
            )
            if self.on_mismatch is not None:
                self.on_mismatch(key, line, text)
        return True

    def flush(self) -> None:
        # TextIOWrapper is not thread-safe: the SDK's flush must not run
        # inside another thread's write.
        with self._lock:
            super().flush()


@dataclass(frozen=True)
class TooLong:
    """A line longer than the limit, read and dropped; ``head`` is its first ``HEAD`` characters."""

    head: str


class LineReader(WireText):
    """The wire in: ``read_item`` returns the next non-blank line, ``TooLong``, or "" at the end."""

    def __init__(self, buffer: IO[bytes], max_line: int) -> None:
        # errors="replace", as the SDK reads: a bad byte is one bad message,
        # not the end of the connection.
        super().__init__(buffer, errors="replace")
        self.max_line = max_line

    def read_item(self) -> str | TooLong:
        while True:
            # One character past the limit tells an over-long line from one that fits.
            line = super().readline(self.max_line + 1)
            if not line:
                return line
            if not line.strip():
                continue
            if len(line) > self.max_line and not line.endswith("\n"):
                head = line[:HEAD]
                del line  # the rest must not be read while this much is held
                self._discard_rest()
                return TooLong(head)
            return line

    def _discard_rest(self) -> None:
        """Read the rest of the current line, a chunk at a time, and drop it."""
        while True:
            chunk = super().readline(_DISCARD_CHUNK)
            if not chunk or chunk.endswith("\n"):
                return


def _open_stdin_diversion() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _open_stdout_diversion() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


DIVERSIONS: Final[dict[int, Callable[[], int]]] = {
    0: _open_stdin_diversion,
    1: _open_stdout_diversion,
}


@contextmanager
def claim(fd: int, stream: TextIO, mode: str) -> Iterator[IO[bytes]]:
    """The wire that was on ``fd`` (0 or 1), as a binary file; ``fd`` points elsewhere meanwhile.

    Best effort, as the SDK's claim: where ``stream`` is not backed by ``fd``
    or descriptors cannot be moved, ``stream``'s own buffer is served in place.
    Raises ``RuntimeError`` when ``fd`` is claimed already in this process.
    """
    with _claim_lock:
        if fd in _claimed:
            raise RuntimeError(f"another stdio transport in this process has claimed fd {fd}")
        _claimed.add(fd)
    try:
        moved = _move_wire(fd, stream, DIVERSIONS[fd])
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
