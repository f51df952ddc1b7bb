"""HTTP connections whose request head does not arrive in time are closed.

uvicorn's h11 protocol waits for a request's head (its request line and
headers) without limit: no timer runs on a fresh connection, and a kept-alive
connection's timer stops at the first byte of the next request. So a client
that opens connections and sends each a few bytes of a head (slowloris)
holds one descriptor per connection for as long as it likes: 800 half-sent
requests were still open after a minute, the server's descriptors up from
12 to 812. ``TimedH11`` closes a connection whose head is not complete
``HEADER_TIMEOUT`` seconds after the connection opened, or after the first
byte of its next request. Only the head is timed: a body is the app's to
read, and a response (an SSE stream) lasts as long as it needs.

Both servers that listen over HTTP use it: ``presets serve --transport
http`` and the console.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT", "TimedH11"]

HEADER_TIMEOUT: Final = 10.0
"""Seconds a request's head may take to arrive, from its connection or its first byte."""


class TimedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head (``http=TimedH11``).

    The deadline is armed while the peer's side is ``IDLE`` (no complete head
    yet) and set once per head: bytes that trickle in do not move it.
    """

    header_timeout: ClassVar[float] = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # a head has begun (or is still coming): its deadline runs
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        # As uvicorn's own keep-alive timeout closes: h11 cannot answer (408)
        # a request whose head it has not read.
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()
