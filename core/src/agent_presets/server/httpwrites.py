"""An HTTP response goes out in as few writes as the loop allows.

uvicorn's h11 protocol writes each piece of a response to the socket the
moment the app hands it over: the status line and headers, then each body
chunk, then (for a chunked response, as every SSE stream is) the closing
``0\\r\\n\\r\\n``. Each write is a ``send`` system call and, on loopback, a
TCP segment that wakes the client. A JSON answer so took two sends, and a
2025-11-25 POST's SSE stream four (headers, the event store's priming
event, the answer, the end).

``CoalescingTransport`` wraps the connection's transport and holds what is
written until the protocol says the response is complete (``flush``), or
until the loop's next turn, whichever comes first. So a JSON answer goes
out in one ``send``, at the moment its last piece is written, and an SSE
stream's headers go out with its first event. Nothing waits longer than a
turn of the loop: an SSE stream's events reach the client as they come (a
POST's answer before the stream's end, which a client reads it without).
Closing the transport writes what is held first; aborting it drops it, as
``abort`` drops the transport's own buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["CoalescingTransport"]


class CoalescingTransport(asyncio.Transport):
    """A transport whose writes of one turn of the loop, or of one response, go out as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    # -- writing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Write what is held now."""
        if not self._held:
            return
        held = self._held
        self._held = []
        if self._transport.is_closing():
            return
        self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    # -- the rest is the transport's own, after what is held

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._held))

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()
