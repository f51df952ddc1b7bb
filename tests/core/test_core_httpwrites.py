"""How the HTTP protocol writes a response: whole JSON answers in one write, streams as they go.

``TimedH11`` (uvicorn's h11 protocol, as both HTTP servers run it) is driven
here with a real request and a real ASGI app over a transport that records
each ``write``; the loop is asyncio's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.config import Config
from uvicorn.server import ServerState

from agent_presets.server.httptimeout import TimedH11
from agent_presets.server.httpwrites import CoalescingTransport

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

REQUEST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"


class Recorder(asyncio.Transport):
    """A transport that keeps each write apart, as the socket would get them."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def serve_one(
    app: App, settle: Callable[[Recorder], Awaitable[None]], transport: Recorder | None = None
) -> Recorder:
    """``app`` answers one request on a fresh connection; ``settle`` runs the loop meanwhile."""
    config = Config(app, lifespan="off", log_level="warning")
    config.load()
    protocol = TimedH11(config, ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = transport or Recorder()
    protocol.connection_made(transport)
    protocol.data_received(REQUEST)
    await settle(transport)
    protocol.connection_lost(None)
    return transport


def test_a_json_answer_goes_out_in_one_write_as_soon_as_it_is_complete() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    transport = Recorder()
    at_the_end: list[list[bytes]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        assert transport.writes == []  # the headers wait for the body
        await send({"type": "http.response.body", "body": body})
        at_the_end.append(list(transport.writes))  # no turn of the loop since

    asyncio.run(serve_one(app, lambda _t: turns(20), transport))
    assert len(at_the_end[0]) == 1, at_the_end
    assert at_the_end[0][0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert at_the_end[0][0].endswith(b"\r\n\r\n" + body)
    assert transport.writes == at_the_end[0]


def test_a_stream_goes_out_as_it_comes_with_its_headers_on_its_first_event() -> None:
    """An SSE stream whose answer comes later: the first event is not held for it."""
    gate = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"id: 1\ndata: \n\n", "more_body": True})
        await gate.wait()  # a slow call
        await send({"type": "http.response.body", "body": b"data: {}\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    seen: list[list[bytes]] = []

    async def settle(transport: Recorder) -> None:
        await turns(20)
        seen.append(list(transport.writes))
        gate.set()
        await turns(20)

    async def main() -> Recorder:
        return await serve_one(app, settle)

    transport = asyncio.run(main())
    # While the call ran: the headers and the first event, in one write.
    assert len(seen[0]) == 1 and b"id: 1" in seen[0][0] and seen[0][0].startswith(b"HTTP/1.1")
    # Then the answer, and the stream's end; nothing is lost or reordered.
    joined = b"".join(transport.writes)
    assert joined.index(b"id: 1") < joined.index(b"data: {}") < joined.rindex(b"0\r\n\r\n")


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.one_of(st.binary(min_size=0, max_size=40), st.integers(min_value=0, max_value=3)),
        max_size=30,
    )
)
def test_what_is_written_reaches_the_socket_whole_and_in_order(steps: list[bytes | int]) -> None:
    """Writes (bytes) and turns of the loop (ints), in any order: the bytes arrive as written."""

    async def main() -> bytes:
        inner = Recorder()
        transport = CoalescingTransport(inner, asyncio.get_running_loop())
        for step in steps:
            if isinstance(step, int):
                await turns(step)
            else:
                transport.write(step)
        transport.close()
        assert inner.closed
        await turns(2)
        return b"".join(inner.writes)

    written = b"".join(s for s in steps if isinstance(s, bytes))
    assert asyncio.run(main()) == written


def test_nothing_waits_more_than_a_turn_and_an_abort_drops_what_is_held() -> None:
    async def main() -> None:
        inner = Recorder()
        transport = CoalescingTransport(inner, asyncio.get_running_loop())
        transport.write(b"a")
        transport.write(b"b")
        assert inner.writes == []  # held within the turn
        await turns(1)
        assert inner.writes == [b"ab"]  # one write, a turn later
        transport.write(b"c")
        transport.abort()
        await turns(1)
        assert inner.writes == [b"ab"] and inner.aborted

    asyncio.run(main())


def test_held_bytes_count_as_buffered() -> None:
    async def main() -> int:
        inner = Recorder()
        inner.get_write_buffer_size = lambda: 5  # type: ignore[method-assign]
        transport = CoalescingTransport(inner, asyncio.get_running_loop())
        transport.write(b"abc")
        return transport.get_write_buffer_size()

    assert asyncio.run(main()) == 8
