"""One stdio connection, served in the era its client settles on after a timed-out probe.

A client that speaks both protocol eras (Claude Code 2.1, the SDK's
``Client`` in its ``auto`` mode) opens a stdio connection with a
``server/discover`` probe and, when no answer comes within its wait (about
2.9 s for Claude Code), falls back to ``initialize``. A server that is still
starting (Python, the MCP SDK and the plugins take 1 to 3 s on a busy
machine) then finds both requests waiting on stdin. The SDK's loop lets the
first request decide the era once, so the abandoned probe opens a
2026-07-28 connection and the ``initialize`` the client now waits on is
refused with ``-32022``: the client logs an error and has to probe again.

``serve_stdio_connection`` treats leading ``server/discover`` requests as
what they are, stateless probes that commit nobody: they are answered by the
SDK's loop as always (the answer reaches a client that stopped waiting, which
ignores it), and when the next request is ``initialize``, that request and
everything after it go to a second loop, which serves the handshake the
client fell back to. Any other request settles the era as the SDK decides,
so a client that waited for its probe's answer is served as before.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from anyio.streams.memory import MemoryObjectSendStream
    from mcp.server.lowlevel import Server
    from mcp.server.models import InitializationOptions
    from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = ["serve_stdio_connection"]

PROBE: Final = "server/discover"
"""The request a dual-era client probes with; it answers the same in either era."""


class _SharedWriter:
    """The wire out, for one of two loops: each loop closes what it is given when it ends."""

    def __init__(self, wire: WriteStream[SessionMessage]) -> None:
        self._wire = wire

    async def send(self, item: SessionMessage, /) -> None:
        await self._wire.send(item)

    async def aclose(self) -> None:
        # The wire is closed once, by serve_stdio_connection, after both loops end.
        pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def serve_stdio_connection(
    server: Server[Any],
    read_stream: ReadStream[SessionMessage | Exception],
    write_stream: WriteStream[SessionMessage],
    init_options: InitializationOptions,
) -> None:
    """What ``server.run`` does, except that ``initialize`` after only probes is served.

    ``server.run`` enters the lifespan and drives the SDK's dual-era loop on
    the streams; so does this, with the second loop of the module docstring
    when the client falls back from its probe.
    """
    writer = _SharedWriter(write_stream)
    async with server.lifespan(server) as state:
        loop = partial(serve_dual_era_loop, server, lifespan_state=state, init_options=init_options)
        first_send, first_receive = anyio.create_memory_object_stream[SessionMessage | Exception]()
        inputs: list[MemoryObjectSendStream[SessionMessage | Exception]] = [first_send]
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(loop, first_receive, writer)
                probes = 0
                settled = False
                async with read_stream:
                    async for item in read_stream:
                        if (
                            not settled
                            and isinstance(item, SessionMessage)
                            and isinstance(item.message, JSONRPCRequest)
                        ):
                            if item.message.method == PROBE:
                                probes += 1
                            else:
                                settled = True
                                if item.message.method == "initialize" and probes:
                                    # The client gave up on its probe: the first loop,
                                    # in the era the probe opened, keeps only the probes.
                                    send, receive = anyio.create_memory_object_stream[
                                        SessionMessage | Exception
                                    ]()
                                    inputs.append(send)
                                    tg.start_soon(loop, receive, writer)
                        await inputs[-1].send(item)
                for stream in inputs:  # EOF: each loop ends as it would at EOF
                    stream.close()
        finally:
            for stream in inputs:
                stream.close()
            await write_stream.aclose()
