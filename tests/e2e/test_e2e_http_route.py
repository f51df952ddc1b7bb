"""``presets serve --transport http`` on the wire: what a raw client reads, request by request.

The MCP path goes straight to the SDK's session manager, past Starlette's
router. A client must see no difference: every other path still gets the
app's own answer (404, the trailing slash's redirect), the MCP path still
checks Host, and calls on one kept-alive connection are answered whole.
"""

from __future__ import annotations

import http.client
import json
import socket

from .conftest import HttpServer

MODERN = "2026-07-28"


def modern_call(n: int, port: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "name": "space_unit_list",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\n"
        f"Mcp-Name: space_unit_list\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_calls_on_one_kept_alive_connection_are_answered_whole(http_server: HttpServer) -> None:
    """Twenty calls in a row on one connection, each answer read to its Content-Length."""
    sock = socket.create_connection(("127.0.0.1", http_server.port), timeout=10)
    reader = sock.makefile("rb")
    try:
        for n in range(1, 21):
            sock.sendall(modern_call(n, http_server.port))
            status = reader.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            length = None
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            assert length is not None
            answer = json.loads(reader.read(length))
            assert answer["id"] == n and answer["result"]["isError"] is False
    finally:
        reader.close()
        sock.close()


def test_other_paths_keep_the_apps_own_answers(http_server: HttpServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", http_server.port, timeout=10)
    try:
        connection.request("GET", "/elsewhere", headers={"Host": "127.0.0.1"})
        response = connection.getresponse()
        response.read()
        assert response.status == 404
        # A trailing slash is the router's to redirect, as before.
        connection.request("POST", "/mcp/", body=b"{}", headers={"Host": "127.0.0.1"})
        response = connection.getresponse()
        response.read()
        assert response.status == 307
        assert response.getheader("location", "").endswith("/mcp")
        # The MCP path itself still checks Host, as the SDK's own route did.
        connection.request(
            "POST",
            "/mcp",
            body=modern_call(1, http_server.port).partition(b"\r\n\r\n")[2],
            headers={
                "Host": "evil.example:80",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MODERN,
            },
        )
        response = connection.getresponse()
        response.read()
        assert response.status == 421
    finally:
        connection.close()
