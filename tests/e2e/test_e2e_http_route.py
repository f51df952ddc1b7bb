"""``presets serve --transport http`` on the wire: what a raw client reads, request by request.

The MCP path goes straight to the SDK's session manager (past Starlette's
router), and each answer is written in as few pieces as the loop allows. A
client must see no difference but the pieces: every other path still gets
the app's own answer, and every answer is whole.
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


def test_a_json_answer_arrives_whole_in_the_first_read(http_server: HttpServer) -> None:
    """Status line, headers and body in one segment: a client's first read holds all of it.

    Written in two sends, the headers arrive alone (a client blocked in
    ``recv`` wakes on the first segment), as they did before.
    """
    sock = socket.create_connection(("127.0.0.1", http_server.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for n in range(1, 21):
            sock.sendall(modern_call(n, http_server.port))
            first = sock.recv(1 << 16)
            head, _, body = first.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), first[:200]
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            assert len(body) == length, f"call {n}: the first read held {len(body)} of {length}"
            answer = json.loads(body)
            assert answer["id"] == n and answer["result"]["isError"] is False
    finally:
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
