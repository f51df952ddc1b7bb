"""SIGINT stops a stdio server whose client keeps stdin open, ending its listen streams cleanly.

Claude Code 2.1.332 stops its MCP server with SIGINT (SIGTERM 100 ms later)
while stdin is open and its `subscriptions/listen` request is pending. The
server did not stop on SIGINT (its stdin read could not be interrupted), and
the SIGTERM that killed it left the listen request answered `-32000
Connection closed`: the last MCP error of that client's drive (issue 17).
Ctrl-C on `presets serve` in a terminal did nothing either.
"""

from __future__ import annotations

import signal
from pathlib import Path

from .test_e2e_listen import listen_then_end

LISTEN = {
    "jsonrpc": "2.0",
    "id": "listen:0",
    "method": "subscriptions/listen",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": True},
    },
}


def test_sigint_ends_an_open_listen_stream_with_its_result_and_the_server_exits(
    tmp_path: Path,
) -> None:
    # stdin stays open, as Claude Code's does
    rest, code = listen_then_end(
        tmp_path, LISTEN, lambda process: process.send_signal(signal.SIGINT), timeout=20
    )
    answers = [m for m in rest if m.get("id") == "listen:0"]
    assert len(answers) == 1 and "result" in answers[0], rest
    assert code == 0
