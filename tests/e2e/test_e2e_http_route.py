"""``presets serve --transport http`` routes the MCP path straight to the session manager.

Past Starlette's router, a client must see no difference: every other path
still gets the app's own answer (404, the trailing slash's redirect), and the
MCP path still checks Host. Calls on one kept-alive connection are
``test_e2e_http_latency``'s.
"""

from __future__ import annotations

import http.client
import json

from .conftest import HttpServer
from .test_e2e_http_latency import CALL, MODERN


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
            body=json.dumps({**CALL, "id": 1}),
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
