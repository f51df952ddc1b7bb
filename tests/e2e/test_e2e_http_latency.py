"""A 2026-07-28 request over a kept-alive HTTP connection is answered without a Nagle stall.

Each answer is written as two pieces, the headers and then the body. With
Nagle's algorithm on, the body waits until the client acknowledges the
headers, and a client delays that acknowledgement (about 40 ms on Linux) on
a connection it keeps using: every modern request paid it (48 ms for a
``tools/list`` the bare SDK answers in 4 ms). The listening socket is now
made so that asyncio turns Nagle off on every connection it accepts.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import time
from urllib.parse import urlsplit

from agent_presets.server.mcp.transport import _bind

from .conftest import HttpServer

MODERN = "2026-07-28"
CALL = {
    "jsonrpc": "2.0",
    "method": "tools/call",
    "params": {
        "name": "space_unit_list",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "latency-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}


def test_connections_accepted_on_the_served_socket_have_nagle_off() -> None:
    # uvicorn serves the socket with asyncio's create_server, as here.
    listening = _bind("127.0.0.1", 0)
    nodelay: list[int] = []

    async def main() -> None:
        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
        async with server:
            port = listening.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(200):
                if nodelay:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert nodelay and nodelay[0] != 0, "TCP_NODELAY is off on an accepted connection"


def _request(host: str, path: str, request_id: int) -> bytes:
    body = json.dumps({**CALL, "id": request_id}).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\n"
        f"Mcp-Name: space_unit_list\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _answer(sock: socket.socket) -> tuple[bytes, float]:
    """One response's body, and how long after its headers the body was complete."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    headers_at = time.perf_counter()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        body += chunk
    return body, time.perf_counter() - headers_at


def test_modern_answers_on_a_kept_alive_connection_arrive_whole(
    http_server: HttpServer,
) -> None:
    parts = urlsplit(http_server.url)
    host = f"{parts.hostname}:{parts.port}"
    gaps = []
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        for request_id in range(1, 13):
            sock.sendall(_request(host, parts.path, request_id))
            body, gap = _answer(sock)
            answer = json.loads(body)
            assert answer["id"] == request_id and "result" in answer, answer
            if request_id > 2:  # the first exchanges of a connection are acknowledged at once
                gaps.append(gap)
    # With Nagle on, the body came a delayed ACK (40 ms or more) after the headers.
    assert statistics.median(gaps) < 0.02, [round(g * 1000, 1) for g in gaps]
