"""The 2026-07-28 HTTP headers a request must carry: ``Mcp-Method`` and ``Mcp-Name``.

They repeat the body's method and tool name so that a proxy can route on
them; a request whose headers say something else than its body, or leave one
out, is refused with ``400`` and ``-32020`` (HeaderMismatch) and runs nothing.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import HttpServer

THEME = "space_app_set_theme"
HEADER_MISMATCH = -32020


def post(server: HttpServer, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": THEME,
            "arguments": {"theme": "dark"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        **headers,
    }
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), sent)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"Mcp-Method": "tools/call", "Mcp-Name": "space_app_run_bash"},
        {"Mcp-Method": "tools/list", "Mcp-Name": THEME},
        {"Mcp-Name": THEME},
        {"Mcp-Method": "tools/call"},
    ],
    ids=["other-name", "other-method", "no-method", "no-name"],
)
def test_headers_that_disagree_with_the_body_are_refused_and_nothing_runs(
    http_server: HttpServer, headers: dict[str, str]
) -> None:
    status, answer = post(http_server, headers)
    assert status == 400, answer
    assert answer["error"]["code"] == HEADER_MISMATCH
    assert answer["id"] == 3
    log = http_server_state(http_server) / "events.jsonl"
    assert not log.exists() or THEME not in log.read_text(encoding="utf-8")  # no call ran


def test_matching_headers_run_the_call(http_server: HttpServer) -> None:
    status, answer = post(http_server, {"Mcp-Method": "tools/call", "Mcp-Name": THEME})
    assert status == 200 and answer["result"]["isError"] is False, answer


def http_server_state(server: HttpServer) -> Path:
    command = server.process.args
    assert isinstance(command, list)
    return Path(command[command.index("--state-dir") + 1])
